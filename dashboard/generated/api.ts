/**
 * Generated from the service's OpenAPI document by scripts/generate-dashboard-types.ts: do not edit.
 * Regenerate with `bun run generate:dashboard-types` after changing the contract (CI checks it is current).
 */

export interface paths {
    "/v1/projects": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the projects you own and those of your teams
         * @description Needs a credential with any one of the scopes `read`, `projects:read`.
         */
        get: operations["projects.list"];
        put?: never;
        /**
         * Create a project
         * @description Needs a credential with any one of the scopes `write`, `projects:write`.
         */
        post: operations["projects.create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/projects/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read a project
         * @description Needs a credential with any one of the scopes `read`, `projects:read`.
         */
        get: operations["projects.get"];
        /**
         * Change a project's name, description, visibility or status
         * @description Needs a credential with any one of the scopes `write`, `projects:write`.
         */
        put: operations["projects.update"];
        post?: never;
        /**
         * Delete a project, for good
         * @description Needs a credential with any one of the scopes `write`, `projects:write`.
         */
        delete: operations["projects.delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/me": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Your profile
         * @description Needs a credential with the scope `read`.
         */
        get: operations["users.me"];
        /**
         * Change your name or avatar (email is read-only)
         * @description Needs a credential with the scope `write`.
         */
        put: operations["users.updateMe"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/teams": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the teams you belong to, with your role in each
         * @description Needs a credential with any one of the scopes `read`, `team:manage`.
         */
        get: operations["teams.list"];
        put?: never;
        /**
         * Create a team; you become its owner
         * @description Needs a credential with the scope `team:manage`.
         */
        post: operations["teams.create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/teams/{team_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read a team (members only), with your role in it
         * @description Needs a credential with any one of the scopes `read`, `team:manage`.
         */
        get: operations["teams.get"];
        /**
         * Rename a team (owners and admins)
         * @description Needs a credential with the scope `team:manage`.
         */
        put: operations["teams.update"];
        post?: never;
        /**
         * Delete a team (owners); 409 while projects still belong to it
         * @description Needs a credential with the scope `team:manage`.
         */
        delete: operations["teams.delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/teams/{team_id}/members": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a team's members (members of the team only)
         * @description Needs a credential with any one of the scopes `read`, `team:manage`.
         */
        get: operations["teams.members"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/teams/{team_id}/members/{user_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /**
         * Change a member's role (owners: any role; admins: between member and admin); the last owner stays (409)
         * @description Needs a credential with the scope `team:manage`.
         */
        put: operations["teams.updateMember"];
        post?: never;
        /**
         * Remove a member (owners; admins, not an owner), or leave with your own user id; emits member.removed
         * @description Needs a credential with the scope `team:manage`.
         */
        delete: operations["teams.removeMember"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/teams/{team_id}/invitations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a team's invitations (members of the team only)
         * @description Needs a credential with any one of the scopes `read`, `team:manage`.
         */
        get: operations["teams.invitations"];
        put?: never;
        /**
         * Invite someone by email (owners and admins; only an owner invites an owner); emits member.invited
         * @description Needs a credential with the scope `team:manage`.
         */
        post: operations["teams.invite"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/teams/{team_id}/invitations/{invitation_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revoke a pending invitation (owners and admins); 409 once it is answered or expired
         * @description Needs a credential with the scope `team:manage`.
         */
        delete: operations["teams.revokeInvitation"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/invitations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the invitations addressed to your email: the pending ones, or those of another `status` (`all` for every one)
         * @description Needs a credential with the scope `read`.
         */
        get: operations["invitations.list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/invitations/{invitation_id}/accept": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Accept an invitation addressed to you: you join the team; emits member.joined
         * @description Needs a credential with any one of the scopes `write`, `team:manage`.
         */
        post: operations["invitations.accept"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/invitations/{invitation_id}/decline": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Decline an invitation addressed to you
         * @description Needs a credential with any one of the scopes `write`, `team:manage`.
         */
        post: operations["invitations.decline"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/projects/{id}/deployments": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a project's deployments (filters: status, environment)
         * @description Needs a credential with any one of the scopes `read`, `projects:read`.
         */
        get: operations["deployments.list"];
        put?: never;
        /**
         * Start a deployment (status running); emits deployment.started; 409 for an archived project
         * @description Needs a credential with any one of the scopes `write`, `projects:write`.
         */
        post: operations["deployments.create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/projects/{id}/deployments/{deployment_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read a deployment
         * @description Needs a credential with any one of the scopes `read`, `projects:read`.
         */
        get: operations["deployments.get"];
        /**
         * Finish a running deployment, once: succeeded (deployment.completed) or failed (deployment.failed); any other change is 409
         * @description Needs a credential with any one of the scopes `write`, `projects:write`.
         */
        put: operations["deployments.update"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/api-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List your API keys, revoked and expired ones included
         * @description Needs an API key or a session token (OAuth access tokens manage no API keys).
         */
        get: operations["apiKeys.list"];
        put?: never;
        /**
         * Create an API key; its value is in this response only
         * @description Needs an API key or a session token (OAuth access tokens manage no API keys).
         */
        post: operations["apiKeys.create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/api-keys/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revoke an API key; it fails with 401 at once
         * @description Needs an API key or a session token (OAuth access tokens manage no API keys).
         */
        delete: operations["apiKeys.revoke"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List your webhooks, each with its health: the latest attempt and the last 24 hours' share of successes
         * @description Needs a credential with the scope `read`.
         */
        get: operations["webhooks.list"];
        put?: never;
        /**
         * Register an endpoint for event deliveries
         * @description Needs a credential with the scope `write`.
         */
        post: operations["webhooks.create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read a webhook
         * @description Needs a credential with the scope `read`.
         */
        get: operations["webhooks.get"];
        /**
         * Change a webhook's url, events or secret, or set a failed one active again
         * @description Needs a credential with the scope `write`.
         */
        put: operations["webhooks.update"];
        post?: never;
        /**
         * Delete a webhook and its delivery log
         * @description Needs a credential with the scope `write`.
         */
        delete: operations["webhooks.delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The delivery log of a webhook
         * @description Needs a credential with the scope `read`.
         */
        get: operations["webhooks.deliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}/deliveries/{delivery_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * One delivery with every attempt
         * @description Needs a credential with the scope `read`.
         */
        get: operations["webhooks.delivery"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/events/{event_id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The deliveries of an event to your webhooks, each with its webhook's URL; 404 unless you are in the event's audience
         * @description Needs a credential with the scope `read`.
         */
        get: operations["webhooks.eventDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}/deliveries/{delivery_id}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Retry a delivery now: one extra attempt outside the schedule, any status (the dashboard's Redeliver)
         * @description Needs a credential with the scope `write`.
         */
        post: operations["webhooks.retry"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}/rotate-secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Change the signing secret without downtime: the old one still signs until previous_secret_expires_at
         * @description Needs a credential with the scope `write`.
         */
        post: operations["webhooks.rotateSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send a webhook.test event to this webhook only
         * @description Needs a credential with the scope `write`.
         */
        post: operations["webhooks.test"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/webhooks/{id}/recover": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * One manual attempt now for each failed delivery of events created in [since, until)
         * @description Needs a credential with the scope `write`.
         */
        post: operations["webhooks.recover"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the events whose audience includes you, newest first (filters: type, created_after, created_before); or, with after, the events that follow that one, oldest first, to catch up without skipping; each item is the event exactly as delivered
         * @description Needs a credential with the scope `read`.
         */
        get: operations["events.list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/events/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read an event exactly as delivered; 404 unless you are in its audience
         * @description Needs a credential with the scope `read`.
         */
        get: operations["events.get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/event-types": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the event types, each with a description, the JSON Schema of its data and an example
         * @description The nine types a webhook can subscribe to and `webhook.test`, in one page. Each `schema` is the JSON Schema of that type's `data`, derived from the schema the service encodes the data with, so it holds for every delivery of that type; `example` is a whole delivery body. Any valid credential may read it.
         */
        get: operations["eventTypes.list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/oauth-clients": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the OAuth clients you registered
         * @description Needs a credential with the scope `read`.
         */
        get: operations["oauthClients.list"];
        put?: never;
        /**
         * Register an OAuth client; a confidential client's secret is in this response only
         * @description Needs a credential with the scope `write`.
         */
        post: operations["oauthClients.create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/oauth-clients/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read an OAuth client you registered
         * @description Needs a credential with the scope `read`.
         */
        get: operations["oauthClients.get"];
        /**
         * Change an OAuth client's name or redirect URIs
         * @description Needs a credential with the scope `write`.
         */
        put: operations["oauthClients.update"];
        post?: never;
        /**
         * Delete an OAuth client with every grant and token it holds (401 at once)
         * @description Needs a credential with the scope `write`.
         */
        delete: operations["oauthClients.delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/oauth-clients/{id}/rotate-secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Replace a confidential client's secret (in this response only); the old one stops working at once
         * @description Needs a credential with the scope `write`.
         */
        post: operations["oauthClients.rotateSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/authorizations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the OAuth applications you authorized
         * @description Needs a credential with the scope `read`.
         */
        get: operations["authorizations.list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/authorizations/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revoke an application's access: every token issued under it answers 401 at once
         * @description Needs a credential with the scope `write`.
         */
        delete: operations["authorizations.revoke"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/me/sessions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List your live sessions (sign-ins); `current` is the one this request uses
         * @description Needs a credential with the scope `read`.
         */
        get: operations["sessions.list"];
        put?: never;
        post?: never;
        /**
         * End every session of yours but the one this request uses (sign out everywhere else)
         * @description Needs a credential with the scope `write`.
         */
        delete: operations["sessions.revokeOthers"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/me/sessions/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * End one of your sessions: its token answers 401 at once
         * @description Needs a credential with the scope `write`.
         */
        delete: operations["sessions.revoke"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/teams/{team_id}/audit-log": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A team's audit log, newest first (team owners and admins only; filters: action, actor_id, created_after, created_before); or, with after, the records that follow that one, oldest first
         * @description Needs a credential with any one of the scopes `read`, `team:manage`.
         */
        get: operations["audit.teamLog"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/me/audit-log": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Your security log: the records you made and those about what is yours, newest first (filters: action, actor_id, created_after, created_before); or, with after, the records that follow that one, oldest first
         * @description Needs a credential with the scope `read`.
         */
        get: operations["audit.myLog"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/oauth/authorize": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Start an authorization (a browser page: sign-in, then consent)
         * @description Open in the user's browser. Afterwards the browser is sent to `redirect_uri` with `code`, `state` and `iss`, or `error=access_denied`. An unknown client or unregistered `redirect_uri` gets an HTML error page instead of a redirect.
         */
        get: operations["oauth.authorize"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/oauth/token": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Exchange an authorization code, or a refresh token, for tokens
         * @description A confidential client authenticates with HTTP Basic or `client_id` and `client_secret` in the body; a public client sends its `client_id` and the PKCE `code_verifier`. Each refresh returns a new refresh token.
         */
        post: operations["oauth.token"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/oauth/revoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Revoke an access or refresh token (RFC 7009)
         * @description A refresh token takes its grant's access tokens with it. An unknown token is not an error.
         */
        post: operations["oauth.revoke"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/oauth/introspect": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Introspect an access or refresh token (RFC 7662), as a confidential client
         * @description For resource servers holding a confidential client's credentials: the answer says whether the token is one of that client's own live tokens. Not open to browsers (no CORS).
         */
        post: operations["oauth.introspect"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/oauth/login": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Sign in with email and password for a session JWT
         * @description For the dashboard and scripts acting as a person: the JWT (EdDSA, one hour) works as a bearer token on every `/v1` endpoint. Repeated failures for an address or an account are answered 429.
         */
        post: operations["oauth.login"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/oauth/logout": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * End the session whose JWT is the bearer token
         * @description The session JWT from `/oauth/login` as `Authorization: Bearer`: its session ends, and the JWT answers `401` on every `/v1` endpoint from then on, on every replica. `204` also when the session had ended already. No body.
         */
        post: operations["oauth.logout"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/oauth/jwks.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The public keys that verify session JWTs
         * @description A JSON Web Key Set of Ed25519 keys (`kid` names the one that signed a token); needs no credential.
         */
        get: operations["oauth.jwks"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/oauth-authorization-server": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Authorization server metadata (RFC 8414)
         * @description The issuer, its endpoints, and the scopes, grant types and PKCE methods it supports; needs no credential.
         */
        get: operations["oauth.metadata"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/oauth-authorization-server/oauth": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Authorization server metadata (RFC 8414)
         * @description The issuer, its endpoints, and the scopes, grant types and PKCE methods it supports; needs no credential.
         */
        get: operations["oauth.metadataForIssuer"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/oauth-protected-resource": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Protected-resource metadata of `{base_url}/v1` (RFC 9728)
         * @description What an OAuth client reads first (RFC 9728): the resource, its authorization server, the scopes and how a token is sent. A `/v1` 401 names this document in `WWW-Authenticate` (`resource_metadata`). No credential.
         */
        get: operations["oauth.resourceMetadata"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/oauth-protected-resource/v1": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Protected-resource metadata of `{base_url}/v1` (RFC 9728)
         * @description What an OAuth client reads first (RFC 9728): the resource, its authorization server, the scopes and how a token is sent. A `/v1` 401 names this document in `WWW-Authenticate` (`resource_metadata`). No credential.
         */
        get: operations["oauth.resourceMetadataForV1"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        Project: {
            /**
             * project id
             * @description `proj_` followed by 26 Crockford base32 characters
             * @example proj_01jd3xkq8w0000000000000000
             */
            id: string;
            name: string;
            description: string;
            /** @enum {string} */
            visibility: "private" | "team" | "public";
            /** @enum {string} */
            status: "active" | "archived";
            /**
             * user id
             * @description `usr_` followed by 26 Crockford base32 characters
             * @example usr_01jd3xkq8w0000000000000000
             */
            owner_id: string;
            team_id: string | null;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            updated_at: string;
        };
        /** @description an integer */
        Int: number;
        /** @description A field, path or query value is invalid; `details` names each one */
        ValidationFailedError: {
            error: {
                /** @enum {string} */
                code: "validation_failed";
                message: string;
                /** @enum {number} */
                status: 400;
                request_id: string;
                details?: components["schemas"]["FieldIssue"][];
            };
        };
        FieldIssue: {
            /** @description Dotted path of the offending field, e.g. `events.1` */
            field: string;
            message: string;
        };
        /** @description No such route, or no such resource visible to you */
        NotFoundError: {
            error: {
                /** @enum {string} */
                code: "not_found";
                message: string;
                /** @enum {number} */
                status: 404;
                request_id: string;
                details?: components["schemas"]["FieldIssue"][];
            };
        };
        /** @description The path exists but not with this method; see the `Allow` header */
        MethodNotAllowedError: {
            error: {
                /** @enum {string} */
                code: "method_not_allowed";
                message: string;
                /** @enum {number} */
                status: 405;
                request_id: string;
                details?: components["schemas"]["FieldIssue"][];
            };
        };
        /** @description Something unexpected failed */
        InternalErrorError: {
            error: {
                /** @enum {string} */
                code: "internal_error";
                message: string;
                /** @enum {number} */
                status: 500;
                request_id: string;
                details?: components["schemas"]["FieldIssue"][];
            };
        };
        /** @description Shutting down, or the database does not answer */
        UnavailableError: {
            error: {
                /** @enum {string} */
                code: "unavailable";
                message: string;
                /** @enum {number} */
                status: 503;
                request_id: string;
                details?: components["schemas"]["FieldIssue"][];
            };
        };
        /** @description A request with the same `Idempotency-Key` is still being processed; retry after `Retry-After` seconds */
        IdempotencyKeyInUseError: {
            error: {
                /** @enum {string} */
                code: "idempotency_key_in_use";
                message: string;
                /** @enum {number} */
                status: 409;
                request_id: string;
                details?: components["schemas"]["FieldIssue"][];
            };
        };
        /** @description The `Idempotency-Key` was already used with another method, path or body */
        IdempotencyKeyReusedError: {
            error: {
                /** @enum {string} */
                code: "idempotency_key_reused";
                message: string;
                /** @enum {number} */
                status: 422;
                request_id: string;
                details?: components["schemas"]["FieldIssue"][];
            };
        };
        /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
        PreconditionFailedError: {
            error: {
                /** @enum {string} */
                code: "precondition_failed";
                message: string;
                /** @enum {number} */
                status: 412;
                request_id: string;
                details?: components["schemas"]["FieldIssue"][];
            };
        };
        /** @description Credentials missing, unknown, expired or revoked */
        UnauthorizedError: {
            error: {
                /** @enum {string} */
                code: "unauthorized";
                message: string;
                /** @enum {number} */
                status: 401;
                request_id: string;
                details?: components["schemas"]["FieldIssue"][];
            };
        };
        /** @description The credential lacks the scope, or the caller the team role, that the message names */
        ForbiddenError: {
            error: {
                /** @enum {string} */
                code: "forbidden";
                message: string;
                /** @enum {number} */
                status: 403;
                request_id: string;
                details?: components["schemas"]["FieldIssue"][];
            };
        };
        /** @description Over the rate limit; see the `Retry-After` header */
        RateLimitedError: {
            error: {
                /** @enum {string} */
                code: "rate_limited";
                message: string;
                /** @enum {number} */
                status: 429;
                request_id: string;
                details?: components["schemas"]["FieldIssue"][];
            };
        };
        /**
         * @example {
         *       "name": "Website",
         *       "description": "The public site",
         *       "visibility": "private"
         *     }
         */
        CreateProject: {
            /** @description 1 to 100 characters once surrounding spaces are trimmed */
            name: string;
            /** @description a string at most 2000 character(s) long */
            description?: string;
            /** @enum {string} */
            visibility?: "private" | "team" | "public";
            /**
             * team id
             * @description `team_` followed by 26 Crockford base32 characters
             * @example team_01jd3xkq8w0000000000000000
             */
            team_id?: string;
        };
        /** @description The body is not JSON, or not a JSON object */
        BadRequestError: {
            error: {
                /** @enum {string} */
                code: "bad_request";
                message: string;
                /** @enum {number} */
                status: 400;
                request_id: string;
                details?: components["schemas"]["FieldIssue"][];
            };
        };
        /** @description The body is over 1 MiB */
        PayloadTooLargeError: {
            error: {
                /** @enum {string} */
                code: "payload_too_large";
                message: string;
                /** @enum {number} */
                status: 413;
                request_id: string;
                details?: components["schemas"]["FieldIssue"][];
            };
        };
        /** @description A POST or PUT body that is not application/json */
        UnsupportedMediaTypeError: {
            error: {
                /** @enum {string} */
                code: "unsupported_media_type";
                message: string;
                /** @enum {number} */
                status: 415;
                request_id: string;
                details?: components["schemas"]["FieldIssue"][];
            };
        };
        /**
         * @example {
         *       "name": "Website",
         *       "description": "The public site, rebuilt"
         *     }
         */
        UpdateProject: {
            /** @description 1 to 100 characters once surrounding spaces are trimmed */
            name?: string;
            /** @description a string at most 2000 character(s) long */
            description?: string;
            /** @enum {string} */
            visibility?: "private" | "team" | "public";
            /** @enum {string} */
            status?: "active" | "archived";
        };
        User: {
            /**
             * user id
             * @description `usr_` followed by 26 Crockford base32 characters
             * @example usr_01jd3xkq8w0000000000000000
             */
            id: string;
            email: string;
            name: string;
            avatar_url: string | null;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            updated_at: string;
        };
        /**
         * @example {
         *       "name": "Ada Lovelace"
         *     }
         */
        UpdateMe: {
            /** @description 1 to 100 characters once surrounding spaces are trimmed */
            name?: string;
            avatar_url?: string | null;
        };
        Team: {
            /**
             * team id
             * @description `team_` followed by 26 Crockford base32 characters
             * @example team_01jd3xkq8w0000000000000000
             */
            id: string;
            name: string;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            updated_at: string;
            /**
             * @description Your role in the team
             * @enum {string}
             */
            role: "owner" | "admin" | "member";
        };
        /**
         * @example {
         *       "name": "Platform"
         *     }
         */
        CreateTeam: {
            /** @description 1 to 100 characters once surrounding spaces are trimmed */
            name: string;
        };
        /**
         * @example {
         *       "name": "Platform team"
         *     }
         */
        UpdateTeam: {
            /** @description 1 to 100 characters once surrounding spaces are trimmed */
            name: string;
        };
        /** @description A uniqueness clash */
        ConflictError: {
            error: {
                /** @enum {string} */
                code: "conflict";
                message: string;
                /** @enum {number} */
                status: 409;
                request_id: string;
                details?: components["schemas"]["FieldIssue"][];
            };
        };
        TeamMember: {
            /**
             * user id
             * @description `usr_` followed by 26 Crockford base32 characters
             * @example usr_01jd3xkq8w0000000000000000
             */
            user_id: string;
            name: string;
            email: string;
            avatar_url: string | null;
            /** @enum {string} */
            role: "owner" | "admin" | "member";
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            joined_at: string;
        };
        /**
         * @example {
         *       "role": "admin"
         *     }
         */
        UpdateMember: {
            /** @enum {string} */
            role: "owner" | "admin" | "member";
        };
        /**
         * @example {
         *       "email": "grace@example.com",
         *       "role": "member"
         *     }
         */
        CreateInvitation: {
            /**
             * Format: email
             * @description An email address, at most 254 characters (surrounding spaces trimmed, stored lower-cased)
             */
            email: string;
            /** @enum {string} */
            role: "owner" | "admin" | "member";
        };
        Invitation: {
            /**
             * invitation id
             * @description `inv_` followed by 26 Crockford base32 characters
             * @example inv_01jd3xkq8w0000000000000000
             */
            id: string;
            /**
             * team id
             * @description `team_` followed by 26 Crockford base32 characters
             * @example team_01jd3xkq8w0000000000000000
             */
            team_id: string;
            email: string;
            /** @enum {string} */
            role: "owner" | "admin" | "member";
            /** @enum {string} */
            status: "pending" | "accepted" | "declined" | "revoked" | "expired";
            /**
             * user id
             * @description `usr_` followed by 26 Crockford base32 characters
             * @example usr_01jd3xkq8w0000000000000000
             */
            invited_by: string;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            expires_at: string;
            answered_at: string | null;
            team_name: string;
            invited_by_name: string;
        };
        Deployment: {
            /**
             * deployment id
             * @description `dpl_` followed by 26 Crockford base32 characters
             * @example dpl_01jd3xkq8w0000000000000000
             */
            id: string;
            /**
             * project id
             * @description `proj_` followed by 26 Crockford base32 characters
             * @example proj_01jd3xkq8w0000000000000000
             */
            project_id: string;
            environment: string;
            ref: string;
            description: string;
            /** @enum {string} */
            status: "running" | "succeeded" | "failed";
            /**
             * user id
             * @description `usr_` followed by 26 Crockford base32 characters
             * @example usr_01jd3xkq8w0000000000000000
             */
            created_by: string;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            updated_at: string;
            finished_at: string | null;
        };
        /**
         * @example {
         *       "environment": "production",
         *       "ref": "main"
         *     }
         */
        CreateDeployment: {
            /**
             * @description a string matching the pattern ^[a-z0-9_.-]{1,64}$
             * @example production
             * @example staging
             */
            environment?: string;
            /**
             * @description A commit, tag or branch: 1 to 200 characters once surrounding spaces are trimmed
             * @example main
             * @example v1.4.2
             * @example 9fceb02d0ae598e95dc970b74767f19372d61af8
             */
            ref: string;
            /** @description a string at most 2000 character(s) long */
            description?: string;
        };
        /**
         * @example {
         *       "status": "succeeded"
         *     }
         */
        UpdateDeployment: {
            /**
             * @description `succeeded` or `failed`: a running deployment finishes, once
             * @enum {string}
             */
            status: "running" | "succeeded" | "failed";
            /** @description a string at most 2000 character(s) long */
            description?: string;
        };
        ApiKey: {
            /**
             * apiKey id
             * @description `key_` followed by 26 Crockford base32 characters
             * @example key_01jd3xkq8w0000000000000000
             */
            id: string;
            name: string;
            scopes: components["schemas"]["Scope"][];
            /** @description The first 12 characters of the key, to recognise it by */
            prefix: string;
            /** @enum {string} */
            status: "active" | "expired" | "revoked";
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            expires_at: string | null;
            last_used_at: string | null;
            revoked_at: string | null;
        };
        /** @enum {string} */
        Scope: "read" | "write" | "projects:read" | "projects:write" | "team:manage" | "billing:read";
        /**
         * @example {
         *       "name": "CI deploys",
         *       "scopes": [
         *         "read",
         *         "write"
         *       ]
         *     }
         */
        CreateApiKey: {
            /** @description 1 to 100 characters once surrounding spaces are trimmed */
            name: string;
            /** @description an array of at least 1 item(s) */
            scopes: components["schemas"]["Scope"][];
            expires_at?: string | null;
        };
        CreatedApiKey: {
            /**
             * apiKey id
             * @description `key_` followed by 26 Crockford base32 characters
             * @example key_01jd3xkq8w0000000000000000
             */
            id: string;
            name: string;
            scopes: components["schemas"]["Scope"][];
            /** @description The first 12 characters of the key, to recognise it by */
            prefix: string;
            /** @enum {string} */
            status: "active" | "expired" | "revoked";
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            expires_at: string | null;
            last_used_at: string | null;
            revoked_at: string | null;
            /** @description The key itself (`pcs_…`). Shown this once; store it now. */
            key: string;
        };
        WebhookWithHealth: {
            /**
             * webhook id
             * @description `whk_` followed by 26 Crockford base32 characters
             * @example whk_01jd3xkq8w0000000000000000
             */
            id: string;
            url: string;
            events: components["schemas"]["EventType"][];
            /** @enum {string} */
            status: "active" | "failed";
            /**
             * @description `hmac`: signed with the shared secret (`v1,…` and `X-Service-Signature`); `ed25519`: signed with the webhook's private key (`v1a,…`), verified with `public_key`
             * @enum {string}
             */
            signature: "hmac" | "ed25519";
            /** @description An `ed25519` webhook's public key: `whpk_` and the base64 of its 32 raw bytes (null for `hmac`) */
            public_key: string | null;
            /** @description The public key rotated out, while its private key still signs (until the rotation's `previous_secret_expires_at`) */
            previous_public_key: string | null;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            updated_at: string;
            failed_at: string | null;
            /** @description Set while an operator has disabled the webhook: nothing is sent to it, its deliveries wait */
            disabled_at: string | null;
            /** @description At most this many attempts to the webhook start in any one-second window, across replicas (1 to 10000); the deliveries beyond it wait. Null: no limit */
            rate_limit: number | null;
            /** @description The latest attempt and the last 24 hours' share of successes; null before the first attempt */
            health: components["schemas"]["WebhookHealth"] | null;
        };
        /** @enum {string} */
        EventType: "project.created" | "project.updated" | "project.deleted" | "member.invited" | "member.joined" | "member.removed" | "deployment.started" | "deployment.completed" | "deployment.failed";
        WebhookHealth: {
            /**
             * Timestamp
             * @description When the latest attempt was made
             * @example 2026-01-31T12:00:00.000Z
             */
            last_attempt_at: string;
            /** @description The latest attempt's HTTP status (null when it got no response: a time-out, a refused connection) */
            last_status_code: components["schemas"]["Int"] | null;
            /**
             * @description Whether the latest attempt succeeded
             * @enum {string}
             */
            last_outcome: "succeeded" | "failed";
            /** @description Attempts made in the last 24 hours */
            attempts_24h: number;
            /** @description The share of those attempts that succeeded, from 0 to 1 (four decimals); null when there was none in 24 hours */
            success_rate_24h: number | null;
        };
        /**
         * @example {
         *       "url": "https://example.com/hooks",
         *       "events": [
         *         "project.created",
         *         "deployment.completed"
         *       ]
         *     }
         */
        CreateWebhook: {
            /** @description a string at most 2048 character(s) long */
            url: string;
            /** @description an array of at least 1 item(s) */
            events: components["schemas"]["EventType"][];
            /** @description a string at most 256 character(s) long */
            secret?: string;
            /** @enum {string} */
            signature?: "hmac" | "ed25519";
            /** @description At most this many attempts to the webhook start in any one-second window, across replicas (1 to 10000); the deliveries beyond it wait. Null: no limit */
            rate_limit?: number | null;
        };
        CreatedWebhook: {
            /**
             * webhook id
             * @description `whk_` followed by 26 Crockford base32 characters
             * @example whk_01jd3xkq8w0000000000000000
             */
            id: string;
            url: string;
            events: components["schemas"]["EventType"][];
            /** @enum {string} */
            status: "active" | "failed";
            /**
             * @description `hmac`: signed with the shared secret (`v1,…` and `X-Service-Signature`); `ed25519`: signed with the webhook's private key (`v1a,…`), verified with `public_key`
             * @enum {string}
             */
            signature: "hmac" | "ed25519";
            /** @description An `ed25519` webhook's public key: `whpk_` and the base64 of its 32 raw bytes (null for `hmac`) */
            public_key: string | null;
            /** @description The public key rotated out, while its private key still signs (until the rotation's `previous_secret_expires_at`) */
            previous_public_key: string | null;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            updated_at: string;
            failed_at: string | null;
            /** @description Set while an operator has disabled the webhook: nothing is sent to it, its deliveries wait */
            disabled_at: string | null;
            /** @description At most this many attempts to the webhook start in any one-second window, across replicas (1 to 10000); the deliveries beyond it wait. Null: no limit */
            rate_limit: number | null;
            /** @description Only when the service generated the secret (`whsec_…`): shown this once */
            secret?: string;
        };
        Webhook: {
            /**
             * webhook id
             * @description `whk_` followed by 26 Crockford base32 characters
             * @example whk_01jd3xkq8w0000000000000000
             */
            id: string;
            url: string;
            events: components["schemas"]["EventType"][];
            /** @enum {string} */
            status: "active" | "failed";
            /**
             * @description `hmac`: signed with the shared secret (`v1,…` and `X-Service-Signature`); `ed25519`: signed with the webhook's private key (`v1a,…`), verified with `public_key`
             * @enum {string}
             */
            signature: "hmac" | "ed25519";
            /** @description An `ed25519` webhook's public key: `whpk_` and the base64 of its 32 raw bytes (null for `hmac`) */
            public_key: string | null;
            /** @description The public key rotated out, while its private key still signs (until the rotation's `previous_secret_expires_at`) */
            previous_public_key: string | null;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            updated_at: string;
            failed_at: string | null;
            /** @description Set while an operator has disabled the webhook: nothing is sent to it, its deliveries wait */
            disabled_at: string | null;
            /** @description At most this many attempts to the webhook start in any one-second window, across replicas (1 to 10000); the deliveries beyond it wait. Null: no limit */
            rate_limit: number | null;
        };
        /**
         * @example {
         *       "events": [
         *         "project.created"
         *       ]
         *     }
         */
        UpdateWebhook: {
            /** @description a string at most 2048 character(s) long */
            url?: string;
            /** @description an array of at least 1 item(s) */
            events?: components["schemas"]["EventType"][];
            /** @description a string at most 256 character(s) long */
            secret?: string;
            /** @enum {string} */
            status?: "active";
            /** @description At most this many attempts to the webhook start in any one-second window, across replicas (1 to 10000); the deliveries beyond it wait. Null: no limit */
            rate_limit?: number | null;
        };
        /** @enum {string} */
        DeliveryEventType: "project.created" | "project.updated" | "project.deleted" | "member.invited" | "member.joined" | "member.removed" | "deployment.started" | "deployment.completed" | "deployment.failed" | "webhook.test";
        Delivery: {
            /**
             * delivery id
             * @description `dlv_` followed by 26 Crockford base32 characters
             * @example dlv_01jd3xkq8w0000000000000000
             */
            id: string;
            /**
             * webhook id
             * @description `whk_` followed by 26 Crockford base32 characters
             * @example whk_01jd3xkq8w0000000000000000
             */
            webhook_id: string;
            /**
             * event id
             * @description `evt_` followed by 26 Crockford base32 characters
             * @example evt_01jd3xkq8w0000000000000000
             */
            event_id: string;
            event_type: components["schemas"]["DeliveryEventType"];
            /** @enum {string} */
            status: "pending" | "delivered" | "failed";
            attempt_count: components["schemas"]["Int"];
            next_attempt_at: string | null;
            last_attempt_at: string | null;
            /** @description The latest attempt's HTTP status (null before any attempt, or when it got no response) */
            last_status_code: components["schemas"]["Int"] | null;
            /** @description The name of the resource the event is about (its data.name: a project's name), null when it has none */
            resource_name: string | null;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
        };
        DeliveryWithAttempts: {
            /**
             * delivery id
             * @description `dlv_` followed by 26 Crockford base32 characters
             * @example dlv_01jd3xkq8w0000000000000000
             */
            id: string;
            /**
             * webhook id
             * @description `whk_` followed by 26 Crockford base32 characters
             * @example whk_01jd3xkq8w0000000000000000
             */
            webhook_id: string;
            /**
             * event id
             * @description `evt_` followed by 26 Crockford base32 characters
             * @example evt_01jd3xkq8w0000000000000000
             */
            event_id: string;
            event_type: components["schemas"]["DeliveryEventType"];
            /** @enum {string} */
            status: "pending" | "delivered" | "failed";
            attempt_count: components["schemas"]["Int"];
            next_attempt_at: string | null;
            last_attempt_at: string | null;
            /** @description The latest attempt's HTTP status (null before any attempt, or when it got no response) */
            last_status_code: components["schemas"]["Int"] | null;
            /** @description The name of the resource the event is about (its data.name: a project's name), null when it has none */
            resource_name: string | null;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            /** @description The request body sent, as a string: the same bytes on every attempt */
            payload: string;
            attempts: components["schemas"]["DeliveryAttempt"][];
        };
        DeliveryAttempt: {
            number: components["schemas"]["Int"];
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            attempted_at: string;
            duration_ms: components["schemas"]["Int"];
            status_code: components["schemas"]["Int"] | null;
            error: string | null;
            response_body: string | null;
            /** @enum {string} */
            outcome: "succeeded" | "failed";
            /**
             * @description What made the attempt: the retry schedule (at most five, counted in attempt_count) or a manual retry (retry, recover, the dashboard's Redeliver), which is extra
             * @enum {string}
             */
            trigger: "schedule" | "manual";
            /** @description The headers sent, signatures included (null for attempts made before they were recorded) */
            request_headers: {
                [key: string]: string;
            } | null;
            /** @description Null without a response */
            response_headers: {
                [key: string]: string;
            } | null;
        };
        EventDelivery: {
            /**
             * delivery id
             * @description `dlv_` followed by 26 Crockford base32 characters
             * @example dlv_01jd3xkq8w0000000000000000
             */
            id: string;
            /**
             * webhook id
             * @description `whk_` followed by 26 Crockford base32 characters
             * @example whk_01jd3xkq8w0000000000000000
             */
            webhook_id: string;
            /**
             * event id
             * @description `evt_` followed by 26 Crockford base32 characters
             * @example evt_01jd3xkq8w0000000000000000
             */
            event_id: string;
            event_type: components["schemas"]["DeliveryEventType"];
            /** @enum {string} */
            status: "pending" | "delivered" | "failed";
            attempt_count: components["schemas"]["Int"];
            next_attempt_at: string | null;
            last_attempt_at: string | null;
            /** @description The latest attempt's HTTP status (null before any attempt, or when it got no response) */
            last_status_code: components["schemas"]["Int"] | null;
            /** @description The name of the resource the event is about (its data.name: a project's name), null when it has none */
            resource_name: string | null;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            /** @description The URL of the webhook the delivery goes to */
            webhook_url: string;
        };
        RotateSecret: {
            /** @description a string at most 256 character(s) long */
            secret?: string;
        };
        RotatedWebhook: {
            /**
             * webhook id
             * @description `whk_` followed by 26 Crockford base32 characters
             * @example whk_01jd3xkq8w0000000000000000
             */
            id: string;
            url: string;
            events: components["schemas"]["EventType"][];
            /** @enum {string} */
            status: "active" | "failed";
            /**
             * @description `hmac`: signed with the shared secret (`v1,…` and `X-Service-Signature`); `ed25519`: signed with the webhook's private key (`v1a,…`), verified with `public_key`
             * @enum {string}
             */
            signature: "hmac" | "ed25519";
            /** @description An `ed25519` webhook's public key: `whpk_` and the base64 of its 32 raw bytes (null for `hmac`) */
            public_key: string | null;
            /** @description The public key rotated out, while its private key still signs (until the rotation's `previous_secret_expires_at`) */
            previous_public_key: string | null;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            updated_at: string;
            failed_at: string | null;
            /** @description Set while an operator has disabled the webhook: nothing is sent to it, its deliveries wait */
            disabled_at: string | null;
            /** @description At most this many attempts to the webhook start in any one-second window, across replicas (1 to 10000); the deliveries beyond it wait. Null: no limit */
            rate_limit: number | null;
            /**
             * Timestamp
             * @description Until then every delivery is signed with the previous secret too (the second `webhook-signature` entry)
             * @example 2026-01-31T12:00:00.000Z
             */
            previous_secret_expires_at: string;
            /** @description Only when the service generated the secret: shown this once */
            secret?: string;
        };
        TestWebhook: Record<string, never>;
        /**
         * @example {
         *       "since": "2026-01-31T12:00:00Z"
         *     }
         */
        RecoverDeliveries: {
            /**
             * @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset
             * @example 2026-01-31
             * @example 2026-01-31T12:00:00Z
             * @example 2026-01-31T14:00:00+02:00
             */
            since: string;
            /**
             * @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset
             * @example 2026-01-31
             * @example 2026-01-31T12:00:00Z
             * @example 2026-01-31T14:00:00+02:00
             */
            until?: string;
        };
        Recovered: {
            /** @description Failed deliveries given one new attempt now */
            queued: number;
        };
        Event: {
            /**
             * event id
             * @description `evt_` followed by 26 Crockford base32 characters
             * @example evt_01jd3xkq8w0000000000000000
             */
            id: string;
            type: components["schemas"]["EventType"];
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            actor?: components["schemas"]["Actor"];
            /** @description The resource the event is about, as it was then */
            data: unknown;
        };
        /** @description Who made the change: `{"type": "user", "id", "name"}` through the API (any credential), `{"type": "operator"}` with the CLI, `{"type": "system"}` for an expiry or a sweep */
        Actor: {
            /** @enum {string} */
            type: "user";
            /**
             * user id
             * @description `usr_` followed by 26 Crockford base32 characters
             * @example usr_01jd3xkq8w0000000000000000
             */
            id: string;
            name: string;
        } | {
            /** @enum {string} */
            type: "operator";
        } | {
            /** @enum {string} */
            type: "system";
        };
        /** @description The `after` cursor names a row retention has removed; start again from `created_after` */
        CursorExpiredError: {
            error: {
                /** @enum {string} */
                code: "cursor_expired";
                message: string;
                /** @enum {number} */
                status: 410;
                request_id: string;
                details?: components["schemas"]["FieldIssue"][];
            };
        };
        EventTypeInfo: {
            type: components["schemas"]["DeliveryEventType"];
            /** @description What happened, in one line */
            description: string;
            schema: Record<string, never>;
            example: components["schemas"]["EventTypeExample"];
        };
        /** @description A delivery body as a receiver gets it */
        EventTypeExample: {
            id: string;
            type: components["schemas"]["DeliveryEventType"];
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            actor: components["schemas"]["Actor"];
            /** @description An example of `data`; it validates against `schema` */
            data: unknown;
        };
        OAuthClient: {
            /**
             * client id
             * @description The client_id
             * @example cli_01jd3xkq8w0000000000000000
             */
            id: string;
            name: string;
            redirect_uris: string[];
            /** @description A public client has no secret and must use PKCE (browser and mobile apps) */
            public: boolean;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            updated_at: string;
        };
        /**
         * @example {
         *       "name": "Deploy bot",
         *       "redirect_uris": [
         *         "https://app.example.com/callback"
         *       ]
         *     }
         */
        CreateOAuthClient: {
            /** @description 1 to 100 characters once surrounding spaces are trimmed */
            name: string;
            /** @description an array of at most 10 item(s) */
            redirect_uris: string[];
            public?: boolean;
        };
        OAuthClientWithSecret: {
            /**
             * client id
             * @description The client_id
             * @example cli_01jd3xkq8w0000000000000000
             */
            id: string;
            name: string;
            redirect_uris: string[];
            /** @description A public client has no secret and must use PKCE (browser and mobile apps) */
            public: boolean;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            updated_at: string;
            /** @description The client secret (`pcc_…`) of a confidential client. Shown this once; store it now. */
            client_secret?: string;
        };
        /**
         * @example {
         *       "name": "Deploy bot (staging)"
         *     }
         */
        UpdateOAuthClient: {
            /** @description 1 to 100 characters once surrounding spaces are trimmed */
            name?: string;
            /** @description an array of at most 10 item(s) */
            redirect_uris?: string[];
        };
        Authorization: {
            /**
             * grant id
             * @description `grant_` followed by 26 Crockford base32 characters
             * @example grant_01jd3xkq8w0000000000000000
             */
            id: string;
            client: {
                /**
                 * client id
                 * @description `cli_` followed by 26 Crockford base32 characters
                 * @example cli_01jd3xkq8w0000000000000000
                 */
                id: string;
                name: string;
            };
            scopes: components["schemas"]["Scope"][];
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            last_used_at: string | null;
        };
        Session: {
            /**
             * session id
             * @description `ses_` followed by 26 Crockford base32 characters
             * @example ses_01jd3xkq8w0000000000000000
             */
            id: string;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            last_used_at: string | null;
            ip: string | null;
            user_agent: string | null;
            current: boolean;
        };
        AuditRecord: {
            /**
             * audit id
             * @description `aud_` followed by 26 Crockford base32 characters
             * @example aud_01jd3xkq8w0000000000000000
             */
            id: string;
            /** @enum {string} */
            action: "project.created" | "project.updated" | "project.archived" | "project.unarchived" | "project.deleted" | "deployment.started" | "deployment.completed" | "deployment.failed" | "member.invited" | "member.joined" | "member.role_changed" | "member.removed" | "invitation.declined" | "invitation.revoked" | "team.created" | "team.renamed" | "team.deleted" | "api_key.created" | "api_key.revoked" | "webhook.created" | "webhook.updated" | "webhook.deleted" | "webhook.secret_rotated" | "webhook.recovered" | "webhook.tested" | "delivery.retried" | "oauth_client.created" | "oauth_client.updated" | "oauth_client.deleted" | "oauth_client.secret_rotated" | "authorization.granted" | "authorization.revoked" | "oauth_token.revoked" | "session.created" | "session.failed" | "session.revoked" | "user.created" | "user.updated" | "user.suspended" | "user.reactivated" | "user.deleted";
            actor: components["schemas"]["Actor"];
            credential: {
                /** @enum {string} */
                type: "api_key" | "oauth" | "session";
                id: string;
            } | null;
            target: {
                type: string;
                id: string;
            };
            target_name: string | null;
            team_id: string | null;
            ip: string | null;
            user_agent: string | null;
            request_id: string | null;
            /**
             * Timestamp
             * @description ISO 8601 UTC timestamp with milliseconds
             * @example 2026-01-31T12:00:00.000Z
             */
            created_at: string;
            changes: {
                [key: string]: unknown[];
            } | null;
        };
        /** @description RFC 6749 §5.2 error */
        OAuthError: {
            /**
             * @example invalid_request
             * @example invalid_client
             * @example invalid_grant
             * @example unsupported_grant_type
             * @example invalid_scope
             * @example temporarily_unavailable
             */
            error: string;
            error_description?: string;
        } & {
            [key: string]: unknown;
        };
        OAuthTokens: {
            /** @description `pco_…`, for `Authorization: Bearer` */
            access_token: string;
            /** @enum {string} */
            token_type: "Bearer";
            /** @description seconds (3600) */
            expires_in: number;
            /** @description `pcr_…`; each refresh returns a new one */
            refresh_token: string;
            /** @description space-separated scopes granted */
            scope: string;
        } & {
            [key: string]: unknown;
        };
        TokenRequest: {
            /** @enum {string} */
            grant_type: "authorization_code" | "refresh_token";
            /** @description authorization_code: the code from the redirect */
            code?: string;
            /** @description authorization_code: the same as in the authorization request */
            redirect_uri?: string;
            /** @description authorization_code: the PKCE verifier, when a challenge was sent */
            code_verifier?: string;
            /** @description refresh_token: the current refresh token */
            refresh_token?: string;
            /** @description refresh_token: a narrower space-separated scope */
            scope?: string;
            /** @description unless HTTP Basic is used */
            client_id?: string;
            /** @description confidential clients, unless HTTP Basic is used */
            client_secret?: string;
        } & {
            [key: string]: unknown;
        };
        RevokeRequest: {
            /** @description an access (`pco_…`) or refresh (`pcr_…`) token */
            token: string;
            /** @enum {string} */
            token_type_hint?: "access_token" | "refresh_token";
            client_id?: string;
            client_secret?: string;
        } & {
            [key: string]: unknown;
        };
        IntrospectionRequest: {
            /** @description an access (`pco_…`) or refresh (`pcr_…`) token */
            token: string;
            /**
             * @description accepted, not needed
             * @enum {string}
             */
            token_type_hint?: "access_token" | "refresh_token";
            /** @description unless HTTP Basic is used */
            client_id?: string;
            /** @description unless HTTP Basic is used */
            client_secret?: string;
        } & {
            [key: string]: unknown;
        };
        /** @description RFC 7662 §2.2. Active: the calling client's own live access or refresh token. Anything else (another client's token, a revoked, rotated or expired one, an API key, a session JWT) is `{active: false}` alone. */
        Introspection: {
            active: boolean;
            /** @description space-separated scopes of the token */
            scope?: string;
            client_id?: string;
            /** @description the user's id */
            sub?: string;
            /** @description epoch seconds */
            exp?: number;
            /** @description epoch seconds */
            iat?: number;
            /** @enum {string} */
            token_type?: "Bearer" | "refresh_token";
        } & {
            [key: string]: unknown;
        };
        /** @description RFC 9728 */
        ProtectedResourceMetadata: {
            /**
             * Format: uri
             * @description `{base_url}/v1`
             */
            resource: string;
            authorization_servers?: string[];
            scopes_supported?: string[];
            bearer_methods_supported?: "header"[];
            resource_name?: string;
            /** Format: uri */
            resource_documentation?: string;
        } & {
            [key: string]: unknown;
        };
        LoginRequest: {
            /** Format: email */
            email: string;
            /** Format: password */
            password: string;
        } & {
            [key: string]: unknown;
        };
        SessionToken: {
            /** @description an EdDSA-signed JWT (one hour), for `Authorization: Bearer` */
            access_token: string;
            /** @enum {string} */
            token_type: "Bearer";
            expires_in: number;
        } & {
            [key: string]: unknown;
        };
        Jwks: {
            keys: ({
                /** @enum {string} */
                kty: "OKP";
                /** @enum {string} */
                crv: "Ed25519";
                x: string;
                kid: string;
                /** @enum {string} */
                alg?: "EdDSA";
                /** @enum {string} */
                use?: "sig";
            } & {
                [key: string]: unknown;
            })[];
        } & {
            [key: string]: unknown;
        };
        /** @description RFC 8414 */
        AuthorizationServerMetadata: {
            /** Format: uri */
            issuer: string;
            /** Format: uri */
            authorization_endpoint: string;
            /** Format: uri */
            token_endpoint: string;
            /** Format: uri */
            revocation_endpoint?: string;
            /** Format: uri */
            introspection_endpoint?: string;
            /** Format: uri */
            jwks_uri?: string;
            scopes_supported?: string[];
            response_types_supported?: string[];
            response_modes_supported?: string[];
            grant_types_supported?: string[];
            code_challenge_methods_supported?: string[];
            token_endpoint_auth_methods_supported?: string[];
            revocation_endpoint_auth_methods_supported?: string[];
            introspection_endpoint_auth_methods_supported?: string[];
            authorization_response_iss_parameter_supported?: boolean;
            /** Format: uri */
            service_documentation?: string;
        } & {
            [key: string]: unknown;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: {
        /** @description The request's id (`req_…`, or the caller's own `X-Request-Id` when valid): quote it when reporting */
        "X-Request-Id": string;
        /** @description Requests the bucket this request was counted against allows per window */
        "X-RateLimit-Limit": number;
        /** @description Requests left in that bucket */
        "X-RateLimit-Remaining": number;
        /** @description When that bucket is full again (Unix time, seconds) */
        "X-RateLimit-Reset": number;
        /** @description RFC 8288 links to the `first`, `prev`, `next` and `last` pages (as GitHub sends them) */
        Link: string;
        /** @description `true` when this is the recorded answer to an earlier request with the same `Idempotency-Key` */
        "Idempotent-Replayed": "true";
        /** @description Seconds to wait before trying again */
        "Retry-After": number;
    };
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    "projects.list": {
        parameters: {
            query?: {
                /** @description Page number, from 1 */
                page?: number;
                /** @description Items per page, 1–100 */
                per_page?: number;
                sort?: "created_at" | "updated_at" | "name";
                order?: "asc" | "desc";
                /** @description a string at most 200 character(s) long */
                search?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_after?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_before?: string;
                status?: "active" | "archived";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Project"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "projects.create": {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry: the same key (yours for `IDEMPOTENCY_TTL`, a day by default) with the same method, path and body answers the first answer again, byte for byte, with `Idempotent-Replayed: true`, and runs nothing again. With another path or body: 422 `idempotency_key_reused`; while the first is still being processed: 409 `idempotency_key_in_use` with `Retry-After`. 1–255 visible ASCII characters; a UUID is a good key. */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateProject"];
            };
        };
        responses: {
            /** @description Project */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Project"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A request with the same `Idempotency-Key` is still being processed; retry after `Retry-After` seconds */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyInUseError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description The `Idempotency-Key` was already used with another method, path or body */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "projects.get": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): while the record still has one of them, 304 with no body. */
                "If-None-Match"?: string;
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `proj_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Project */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Project"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description Not modified: the record still has an `ETag` named in `If-None-Match`; no body */
            304: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "projects.update": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `proj_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateProject"];
            };
        };
        responses: {
            /** @description Project */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Project"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "projects.delete": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `proj_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            204: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "users.me": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): while the record still has one of them, 304 with no body. */
                "If-None-Match"?: string;
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description User */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["User"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description Not modified: the record still has an `ETag` named in `If-None-Match`; no body */
            304: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An unknown query parameter (`details` names it) */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "users.updateMe": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateMe"];
            };
        };
        responses: {
            /** @description User */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["User"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "teams.list": {
        parameters: {
            query?: {
                /** @description Page number, from 1 */
                page?: number;
                /** @description Items per page, 1–100 */
                per_page?: number;
                sort?: "created_at" | "updated_at" | "name";
                order?: "asc" | "desc";
                /** @description a string at most 200 character(s) long */
                search?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_after?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_before?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Team"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "teams.create": {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry: the same key (yours for `IDEMPOTENCY_TTL`, a day by default) with the same method, path and body answers the first answer again, byte for byte, with `Idempotent-Replayed: true`, and runs nothing again. With another path or body: 422 `idempotency_key_reused`; while the first is still being processed: 409 `idempotency_key_in_use` with `Retry-After`. 1–255 visible ASCII characters; a UUID is a good key. */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateTeam"];
            };
        };
        responses: {
            /** @description Team */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Team"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A request with the same `Idempotency-Key` is still being processed; retry after `Retry-After` seconds */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyInUseError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description The `Idempotency-Key` was already used with another method, path or body */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "teams.get": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): while the record still has one of them, 304 with no body. */
                "If-None-Match"?: string;
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `team_` followed by 26 Crockford base32 characters */
                team_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Team */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Team"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description Not modified: the record still has an `ETag` named in `If-None-Match`; no body */
            304: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "teams.update": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `team_` followed by 26 Crockford base32 characters */
                team_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateTeam"];
            };
        };
        responses: {
            /** @description Team */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Team"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "teams.delete": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `team_` followed by 26 Crockford base32 characters */
                team_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            204: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A uniqueness clash */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "teams.members": {
        parameters: {
            query?: {
                /** @description Page number, from 1 */
                page?: number;
                /** @description Items per page, 1–100 */
                per_page?: number;
                sort?: "joined_at" | "name";
                order?: "asc" | "desc";
                /** @description a string at most 200 character(s) long */
                search?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_after?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_before?: string;
            };
            header?: never;
            path: {
                /** @description `team_` followed by 26 Crockford base32 characters */
                team_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["TeamMember"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "teams.updateMember": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `team_` followed by 26 Crockford base32 characters */
                team_id: string;
                /** @description `usr_` followed by 26 Crockford base32 characters */
                user_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateMember"];
            };
        };
        responses: {
            /** @description TeamMember */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["TeamMember"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A uniqueness clash */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "teams.removeMember": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `team_` followed by 26 Crockford base32 characters */
                team_id: string;
                /** @description `usr_` followed by 26 Crockford base32 characters */
                user_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            204: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A uniqueness clash */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "teams.invitations": {
        parameters: {
            query?: {
                /** @description Page number, from 1 */
                page?: number;
                /** @description Items per page, 1–100 */
                per_page?: number;
                sort?: "created_at";
                order?: "asc" | "desc";
                /** @description a string at most 200 character(s) long */
                search?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_after?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_before?: string;
                status?: "pending" | "accepted" | "declined" | "revoked" | "expired";
            };
            header?: never;
            path: {
                /** @description `team_` followed by 26 Crockford base32 characters */
                team_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Invitation"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "teams.invite": {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry: the same key (yours for `IDEMPOTENCY_TTL`, a day by default) with the same method, path and body answers the first answer again, byte for byte, with `Idempotent-Replayed: true`, and runs nothing again. With another path or body: 422 `idempotency_key_reused`; while the first is still being processed: 409 `idempotency_key_in_use` with `Retry-After`. 1–255 visible ASCII characters; a UUID is a good key. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description `team_` followed by 26 Crockford base32 characters */
                team_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateInvitation"];
            };
        };
        responses: {
            /** @description Invitation */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Invitation"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A request with the same `Idempotency-Key` is still being processed; retry after `Retry-After` seconds */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyInUseError"] | components["schemas"]["ConflictError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description The `Idempotency-Key` was already used with another method, path or body */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "teams.revokeInvitation": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `team_` followed by 26 Crockford base32 characters */
                team_id: string;
                /** @description `inv_` followed by 26 Crockford base32 characters */
                invitation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            204: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A uniqueness clash */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "invitations.list": {
        parameters: {
            query?: {
                /** @description Page number, from 1 */
                page?: number;
                /** @description Items per page, 1–100 */
                per_page?: number;
                sort?: "created_at";
                order?: "asc" | "desc";
                /** @description a string at most 200 character(s) long */
                search?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_after?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_before?: string;
                /** @description Which invitations: `pending` (the default), `accepted`, `declined`, `revoked`, `expired` or `all` */
                status?: "pending" | "accepted" | "declined" | "revoked" | "expired" | "all";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Invitation"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "invitations.accept": {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry: the same key (yours for `IDEMPOTENCY_TTL`, a day by default) with the same method, path and body answers the first answer again, byte for byte, with `Idempotent-Replayed: true`, and runs nothing again. With another path or body: 422 `idempotency_key_reused`; while the first is still being processed: 409 `idempotency_key_in_use` with `Retry-After`. 1–255 visible ASCII characters; a UUID is a good key. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description `inv_` followed by 26 Crockford base32 characters */
                invitation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description TeamMember */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["TeamMember"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A request with the same `Idempotency-Key` is still being processed; retry after `Retry-After` seconds */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyInUseError"] | components["schemas"]["ConflictError"];
                };
            };
            /** @description The `Idempotency-Key` was already used with another method, path or body */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "invitations.decline": {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry: the same key (yours for `IDEMPOTENCY_TTL`, a day by default) with the same method, path and body answers the first answer again, byte for byte, with `Idempotent-Replayed: true`, and runs nothing again. With another path or body: 422 `idempotency_key_reused`; while the first is still being processed: 409 `idempotency_key_in_use` with `Retry-After`. 1–255 visible ASCII characters; a UUID is a good key. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description `inv_` followed by 26 Crockford base32 characters */
                invitation_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Invitation */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Invitation"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A request with the same `Idempotency-Key` is still being processed; retry after `Retry-After` seconds */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyInUseError"] | components["schemas"]["ConflictError"];
                };
            };
            /** @description The `Idempotency-Key` was already used with another method, path or body */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "deployments.list": {
        parameters: {
            query?: {
                /** @description Page number, from 1 */
                page?: number;
                /** @description Items per page, 1–100 */
                per_page?: number;
                sort?: "created_at" | "updated_at";
                order?: "asc" | "desc";
                /** @description a string at most 200 character(s) long */
                search?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_after?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_before?: string;
                status?: "running" | "succeeded" | "failed";
                /** @description a string matching the pattern ^[a-z0-9_.-]{1,64}$ */
                environment?: string;
            };
            header?: never;
            path: {
                /** @description `proj_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Deployment"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "deployments.create": {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry: the same key (yours for `IDEMPOTENCY_TTL`, a day by default) with the same method, path and body answers the first answer again, byte for byte, with `Idempotent-Replayed: true`, and runs nothing again. With another path or body: 422 `idempotency_key_reused`; while the first is still being processed: 409 `idempotency_key_in_use` with `Retry-After`. 1–255 visible ASCII characters; a UUID is a good key. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description `proj_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateDeployment"];
            };
        };
        responses: {
            /** @description Deployment */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Deployment"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A request with the same `Idempotency-Key` is still being processed; retry after `Retry-After` seconds */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyInUseError"] | components["schemas"]["ConflictError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description The `Idempotency-Key` was already used with another method, path or body */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "deployments.get": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): while the record still has one of them, 304 with no body. */
                "If-None-Match"?: string;
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `proj_` followed by 26 Crockford base32 characters */
                id: string;
                /** @description `dpl_` followed by 26 Crockford base32 characters */
                deployment_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deployment */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Deployment"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description Not modified: the record still has an `ETag` named in `If-None-Match`; no body */
            304: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "deployments.update": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `proj_` followed by 26 Crockford base32 characters */
                id: string;
                /** @description `dpl_` followed by 26 Crockford base32 characters */
                deployment_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateDeployment"];
            };
        };
        responses: {
            /** @description Deployment */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Deployment"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A uniqueness clash */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "apiKeys.list": {
        parameters: {
            query?: {
                /** @description Page number, from 1 */
                page?: number;
                /** @description Items per page, 1–100 */
                per_page?: number;
                sort?: "created_at" | "name";
                order?: "asc" | "desc";
                /** @description a string at most 200 character(s) long */
                search?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_after?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_before?: string;
                status?: "active" | "expired" | "revoked";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["ApiKey"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "apiKeys.create": {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry: the same key (yours for `IDEMPOTENCY_TTL`, a day by default) with the same method, path and body answers the first answer again, byte for byte, with `Idempotent-Replayed: true`, and runs nothing again. With another path or body: 422 `idempotency_key_reused`; while the first is still being processed: 409 `idempotency_key_in_use` with `Retry-After`. 1–255 visible ASCII characters; a UUID is a good key. */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateApiKey"];
            };
        };
        responses: {
            /** @description CreatedApiKey */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["CreatedApiKey"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A request with the same `Idempotency-Key` is still being processed; retry after `Retry-After` seconds */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyInUseError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description The `Idempotency-Key` was already used with another method, path or body */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "apiKeys.revoke": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `key_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            204: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "webhooks.list": {
        parameters: {
            query?: {
                /** @description Page number, from 1 */
                page?: number;
                /** @description Items per page, 1–100 */
                per_page?: number;
                sort?: "created_at" | "updated_at";
                order?: "asc" | "desc";
                /** @description a string at most 200 character(s) long */
                search?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_after?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_before?: string;
                status?: "active" | "failed";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["WebhookWithHealth"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "webhooks.create": {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry: the same key (yours for `IDEMPOTENCY_TTL`, a day by default) with the same method, path and body answers the first answer again, byte for byte, with `Idempotent-Replayed: true`, and runs nothing again. With another path or body: 422 `idempotency_key_reused`; while the first is still being processed: 409 `idempotency_key_in_use` with `Retry-After`. 1–255 visible ASCII characters; a UUID is a good key. */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateWebhook"];
            };
        };
        responses: {
            /** @description CreatedWebhook */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["CreatedWebhook"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A request with the same `Idempotency-Key` is still being processed; retry after `Retry-After` seconds */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyInUseError"] | components["schemas"]["ConflictError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description The `Idempotency-Key` was already used with another method, path or body */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "webhooks.get": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): while the record still has one of them, 304 with no body. */
                "If-None-Match"?: string;
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `whk_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Webhook */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Webhook"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description Not modified: the record still has an `ETag` named in `If-None-Match`; no body */
            304: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "webhooks.update": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `whk_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateWebhook"];
            };
        };
        responses: {
            /** @description Webhook */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Webhook"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A uniqueness clash */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConflictError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "webhooks.delete": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `whk_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            204: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "webhooks.deliveries": {
        parameters: {
            query?: {
                /** @description Page number, from 1 */
                page?: number;
                /** @description Items per page, 1–100 */
                per_page?: number;
                sort?: "created_at";
                order?: "asc" | "desc";
                /** @description a string at most 200 character(s) long */
                search?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_after?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_before?: string;
                status?: "pending" | "delivered" | "failed";
                event_type?: components["schemas"]["DeliveryEventType"];
            };
            header?: never;
            path: {
                /** @description `whk_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Delivery"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "webhooks.delivery": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): while the record still has one of them, 304 with no body. */
                "If-None-Match"?: string;
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `whk_` followed by 26 Crockford base32 characters */
                id: string;
                /** @description `dlv_` followed by 26 Crockford base32 characters */
                delivery_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description DeliveryWithAttempts */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["DeliveryWithAttempts"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description Not modified: the record still has an `ETag` named in `If-None-Match`; no body */
            304: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "webhooks.eventDeliveries": {
        parameters: {
            query?: {
                /** @description Page number, from 1 */
                page?: number;
                /** @description Items per page, 1–100 */
                per_page?: number;
                sort?: "created_at";
                order?: "asc" | "desc";
                /** @description a string at most 200 character(s) long */
                search?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_after?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_before?: string;
                status?: "pending" | "delivered" | "failed";
            };
            header?: never;
            path: {
                /** @description `evt_` followed by 26 Crockford base32 characters */
                event_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["EventDelivery"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "webhooks.retry": {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry: the same key (yours for `IDEMPOTENCY_TTL`, a day by default) with the same method, path and body answers the first answer again, byte for byte, with `Idempotent-Replayed: true`, and runs nothing again. With another path or body: 422 `idempotency_key_reused`; while the first is still being processed: 409 `idempotency_key_in_use` with `Retry-After`. 1–255 visible ASCII characters; a UUID is a good key. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description `whk_` followed by 26 Crockford base32 characters */
                id: string;
                /** @description `dlv_` followed by 26 Crockford base32 characters */
                delivery_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Delivery */
            202: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Delivery"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A request with the same `Idempotency-Key` is still being processed; retry after `Retry-After` seconds */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyInUseError"];
                };
            };
            /** @description The `Idempotency-Key` was already used with another method, path or body */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "webhooks.rotateSecret": {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry: the same key (yours for `IDEMPOTENCY_TTL`, a day by default) with the same method, path and body answers the first answer again, byte for byte, with `Idempotent-Replayed: true`, and runs nothing again. With another path or body: 422 `idempotency_key_reused`; while the first is still being processed: 409 `idempotency_key_in_use` with `Retry-After`. 1–255 visible ASCII characters; a UUID is a good key. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description `whk_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RotateSecret"];
            };
        };
        responses: {
            /** @description RotatedWebhook */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["RotatedWebhook"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A request with the same `Idempotency-Key` is still being processed; retry after `Retry-After` seconds */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyInUseError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description The `Idempotency-Key` was already used with another method, path or body */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "webhooks.test": {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry: the same key (yours for `IDEMPOTENCY_TTL`, a day by default) with the same method, path and body answers the first answer again, byte for byte, with `Idempotent-Replayed: true`, and runs nothing again. With another path or body: 422 `idempotency_key_reused`; while the first is still being processed: 409 `idempotency_key_in_use` with `Retry-After`. 1–255 visible ASCII characters; a UUID is a good key. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description `whk_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TestWebhook"];
            };
        };
        responses: {
            /** @description Delivery */
            202: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Delivery"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A request with the same `Idempotency-Key` is still being processed; retry after `Retry-After` seconds */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyInUseError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description The `Idempotency-Key` was already used with another method, path or body */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "webhooks.recover": {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry: the same key (yours for `IDEMPOTENCY_TTL`, a day by default) with the same method, path and body answers the first answer again, byte for byte, with `Idempotent-Replayed: true`, and runs nothing again. With another path or body: 422 `idempotency_key_reused`; while the first is still being processed: 409 `idempotency_key_in_use` with `Retry-After`. 1–255 visible ASCII characters; a UUID is a good key. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description `whk_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RecoverDeliveries"];
            };
        };
        responses: {
            /** @description Recovered */
            202: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Recovered"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A request with the same `Idempotency-Key` is still being processed; retry after `Retry-After` seconds */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyInUseError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description The `Idempotency-Key` was already used with another method, path or body */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "events.list": {
        parameters: {
            query?: {
                /** @description An event id: the events that follow it in the feed's sequence (the order in which they became visible), oldest first; pass the last id of each page to the next. Not with page, created_after or created_before. 404 when it is not one of your events, 410 cursor_expired when retention has removed it */
                after?: string;
                /** @description Page number, from 1 */
                page?: number;
                /** @description Items per page, 1–100 */
                per_page?: number;
                /** @description One event type, or several separated by commas (e.g. member.joined,member.removed): project.created, project.updated, project.deleted, member.invited, member.joined, member.removed, deployment.started, deployment.completed, deployment.failed */
                type?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_after?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_before?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Event"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    } | {
                        data: components["schemas"]["Event"][];
                        meta: {
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description The `after` cursor names a row retention has removed; start again from `created_after` */
            410: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CursorExpiredError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "events.get": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): while the record still has one of them, 304 with no body. */
                "If-None-Match"?: string;
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `evt_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Event */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Event"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description Not modified: the record still has an `ETag` named in `If-None-Match`; no body */
            304: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "eventTypes.list": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["EventTypeInfo"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description An unknown query parameter (`details` names it) */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "oauthClients.list": {
        parameters: {
            query?: {
                /** @description Page number, from 1 */
                page?: number;
                /** @description Items per page, 1–100 */
                per_page?: number;
                sort?: "created_at" | "updated_at" | "name";
                order?: "asc" | "desc";
                /** @description a string at most 200 character(s) long */
                search?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_after?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_before?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["OAuthClient"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "oauthClients.create": {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry: the same key (yours for `IDEMPOTENCY_TTL`, a day by default) with the same method, path and body answers the first answer again, byte for byte, with `Idempotent-Replayed: true`, and runs nothing again. With another path or body: 422 `idempotency_key_reused`; while the first is still being processed: 409 `idempotency_key_in_use` with `Retry-After`. 1–255 visible ASCII characters; a UUID is a good key. */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateOAuthClient"];
            };
        };
        responses: {
            /** @description OAuthClientWithSecret */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["OAuthClientWithSecret"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A request with the same `Idempotency-Key` is still being processed; retry after `Retry-After` seconds */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyInUseError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description The `Idempotency-Key` was already used with another method, path or body */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "oauthClients.get": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): while the record still has one of them, 304 with no body. */
                "If-None-Match"?: string;
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `cli_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OAuthClient */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["OAuthClient"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description Not modified: the record still has an `ETag` named in `If-None-Match`; no body */
            304: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "oauthClients.update": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `cli_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UpdateOAuthClient"];
            };
        };
        responses: {
            /** @description OAuthClient */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description The representation's entity tag: send it in `If-None-Match` (304 while unchanged) or `If-Match` */
                    ETag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["OAuthClient"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BadRequestError"] | components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description The body is over 1 MiB */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PayloadTooLargeError"];
                };
            };
            /** @description A POST or PUT body that is not application/json */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnsupportedMediaTypeError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "oauthClients.delete": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `cli_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            204: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "oauthClients.rotateSecret": {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the request safe to retry: the same key (yours for `IDEMPOTENCY_TTL`, a day by default) with the same method, path and body answers the first answer again, byte for byte, with `Idempotent-Replayed: true`, and runs nothing again. With another path or body: 422 `idempotency_key_reused`; while the first is still being processed: 409 `idempotency_key_in_use` with `Retry-After`. 1–255 visible ASCII characters; a UUID is a good key. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description `cli_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OAuthClientWithSecret */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["OAuthClientWithSecret"];
                        meta: {
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description A request with the same `Idempotency-Key` is still being processed; retry after `Retry-After` seconds */
            409: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyInUseError"];
                };
            };
            /** @description The `Idempotency-Key` was already used with another method, path or body */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IdempotencyKeyReusedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "authorizations.list": {
        parameters: {
            query?: {
                /** @description Page number, from 1 */
                page?: number;
                /** @description Items per page, 1–100 */
                per_page?: number;
                sort?: "created_at" | "name";
                order?: "asc" | "desc";
                /** @description a string at most 200 character(s) long */
                search?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_after?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_before?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Authorization"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "authorizations.revoke": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `grant_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            204: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "sessions.list": {
        parameters: {
            query?: {
                /** @description Page number, from 1 */
                page?: number;
                /** @description Items per page, 1–100 */
                per_page?: number;
                sort?: "created_at";
                order?: "asc" | "desc";
                /** @description a string at most 200 character(s) long */
                search?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_after?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_before?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["Session"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "sessions.revokeOthers": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            204: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An unknown query parameter (`details` names it) */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "sessions.revoke": {
        parameters: {
            query?: never;
            header?: {
                /** @description One or more `ETag`s (or `*`): unless the record's current `ETag` is among them, 412 `precondition_failed` and nothing changes. Of concurrent requests carrying the same tag, one succeeds. */
                "If-Match"?: string;
            };
            path: {
                /** @description `ses_` followed by 26 Crockford base32 characters */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            204: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description `If-Match` names no current `ETag` of the resource: someone changed it since you read it; nothing was changed */
            412: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PreconditionFailedError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "audit.teamLog": {
        parameters: {
            query?: {
                /** @description An audit record id: the records of this log that follow it in the log's sequence (the order in which they became visible), oldest first; pass the last id of each page to the next. Not with page, created_after or created_before. 404 when it is not a record of this log, 410 cursor_expired when retention has removed it */
                after?: string;
                /** @description Page number, from 1 */
                page?: number;
                /** @description Items per page, 1–100 */
                per_page?: number;
                /** @description One action, or several separated by commas: project.created, project.updated, project.archived, project.unarchived, project.deleted, deployment.started, deployment.completed, deployment.failed, member.invited, member.joined, member.role_changed, member.removed, invitation.declined, invitation.revoked, team.created, team.renamed, team.deleted, api_key.created, api_key.revoked, webhook.created, webhook.updated, webhook.deleted, webhook.secret_rotated, webhook.recovered, webhook.tested, delivery.retried, oauth_client.created, oauth_client.updated, oauth_client.deleted, oauth_client.secret_rotated, authorization.granted, authorization.revoked, oauth_token.revoked, session.created, session.failed, session.revoked, user.created, user.updated, user.suspended, user.reactivated, user.deleted */
                action?: string;
                /** @description `usr_` followed by 26 Crockford base32 characters */
                actor_id?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_after?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_before?: string;
            };
            header?: never;
            path: {
                /** @description `team_` followed by 26 Crockford base32 characters */
                team_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["AuditRecord"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    } | {
                        data: components["schemas"]["AuditRecord"][];
                        meta: {
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description The `after` cursor names a row retention has removed; start again from `created_after` */
            410: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CursorExpiredError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "audit.myLog": {
        parameters: {
            query?: {
                /** @description An audit record id: the records of this log that follow it in the log's sequence (the order in which they became visible), oldest first; pass the last id of each page to the next. Not with page, created_after or created_before. 404 when it is not a record of this log, 410 cursor_expired when retention has removed it */
                after?: string;
                /** @description Page number, from 1 */
                page?: number;
                /** @description Items per page, 1–100 */
                per_page?: number;
                /** @description One action, or several separated by commas: project.created, project.updated, project.archived, project.unarchived, project.deleted, deployment.started, deployment.completed, deployment.failed, member.invited, member.joined, member.role_changed, member.removed, invitation.declined, invitation.revoked, team.created, team.renamed, team.deleted, api_key.created, api_key.revoked, webhook.created, webhook.updated, webhook.deleted, webhook.secret_rotated, webhook.recovered, webhook.tested, delivery.retried, oauth_client.created, oauth_client.updated, oauth_client.deleted, oauth_client.secret_rotated, authorization.granted, authorization.revoked, oauth_token.revoked, session.created, session.failed, session.revoked, user.created, user.updated, user.suspended, user.reactivated, user.deleted */
                action?: string;
                /** @description `usr_` followed by 26 Crockford base32 characters */
                actor_id?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_after?: string;
                /** @description ISO 8601 date (`2026-01-31`, midnight UTC) or date-time with `Z` or an offset */
                created_before?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Success */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        data: components["schemas"]["AuditRecord"][];
                        meta: {
                            total: components["schemas"]["Int"];
                            page: components["schemas"]["Int"];
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    } | {
                        data: components["schemas"]["AuditRecord"][];
                        meta: {
                            per_page: components["schemas"]["Int"];
                            request_id: string;
                        };
                    };
                };
            };
            /** @description The request did not match the expected schema */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValidationFailedError"];
                };
            };
            /** @description Credentials missing, unknown, expired or revoked */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description `Bearer realm="api", error="invalid_token", resource_metadata="{base_url}/.well-known/oauth-protected-resource/v1"` (no `error` when no credential was sent) */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnauthorizedError"];
                };
            };
            /** @description The credential lacks the scope, or the caller the team role, that the message names */
            403: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    /** @description When the credential lacks a scope: `Bearer realm="api", error="insufficient_scope", scope="<any one of these>", resource_metadata="…"` (RFC 6750 §3.1); absent on a 403 no scope would cure */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ForbiddenError"];
                };
            };
            /** @description No such route, or no such resource visible to you */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["NotFoundError"];
                };
            };
            /** @description The path exists but not with this method; see the `Allow` header */
            405: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MethodNotAllowedError"];
                };
            };
            /** @description The `after` cursor names a row retention has removed; start again from `created_after` */
            410: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CursorExpiredError"];
                };
            };
            /** @description Over the rate limit; see the `Retry-After` header */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RateLimitedError"];
                };
            };
            /** @description Something unexpected failed */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InternalErrorError"];
                };
            };
            /** @description Shutting down, or the database does not answer */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    "X-RateLimit-Limit": components["headers"]["X-RateLimit-Limit"];
                    "X-RateLimit-Remaining": components["headers"]["X-RateLimit-Remaining"];
                    "X-RateLimit-Reset": components["headers"]["X-RateLimit-Reset"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UnavailableError"];
                };
            };
        };
    };
    "oauth.authorize": {
        parameters: {
            query: {
                response_type: "code";
                client_id: string;
                redirect_uri: string;
                /** @description space-separated scope names */
                scope: string;
                state?: string;
                /** @description PKCE; required for public clients */
                code_challenge?: string;
                code_challenge_method?: "S256";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The sign-in page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/html": string;
                };
            };
            /** @description Back to the client with an error (`invalid_scope`, …) */
            302: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description An HTML error page (unknown client, unregistered redirect URI) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/html": string;
                };
            };
        };
    };
    "oauth.token": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/x-www-form-urlencoded": components["schemas"]["TokenRequest"];
                "application/json": components["schemas"]["TokenRequest"];
            };
        };
        responses: {
            /** @description Tokens (`Cache-Control: no-store`) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthTokens"];
                };
            };
            /** @description `invalid_request`, `invalid_grant`, `unsupported_grant_type`, `invalid_scope` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
            /** @description `invalid_client` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
            /** @description `temporarily_unavailable`: over this client's limit (`OAUTH_CLIENT_LIMIT_PER_MINUTE`), or too many failed client authentications from this address; see `Retry-After` */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
        };
    };
    "oauth.revoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/x-www-form-urlencoded": components["schemas"]["RevokeRequest"];
                "application/json": components["schemas"]["RevokeRequest"];
            };
        };
        responses: {
            /** @description Revoked (or unknown) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, never>;
                };
            };
            /** @description `invalid_request` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
            /** @description `invalid_client` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
            /** @description `temporarily_unavailable`: over this client's limit (`OAUTH_CLIENT_LIMIT_PER_MINUTE`), or too many failed client authentications from this address; see `Retry-After` */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
        };
    };
    "oauth.introspect": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/x-www-form-urlencoded": components["schemas"]["IntrospectionRequest"];
                "application/json": components["schemas"]["IntrospectionRequest"];
            };
        };
        responses: {
            /** @description The token's state (`Cache-Control: no-store`) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Introspection"];
                };
            };
            /** @description `invalid_request` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
            /** @description `invalid_client`: a public client, no client, or a wrong secret */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
            /** @description `temporarily_unavailable`: over this client's limit (`OAUTH_CLIENT_LIMIT_PER_MINUTE`), or too many failed client authentications from this address; see `Retry-After` */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
        };
    };
    "oauth.login": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["LoginRequest"];
            };
        };
        responses: {
            /** @description A session JWT (one hour) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionToken"];
                };
            };
            /** @description `invalid_request` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
            /** @description `invalid_grant`: the email or password is wrong */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
            /** @description `temporarily_unavailable`: too many requests from this address (or failed sign-ins for this account); see `Retry-After` */
            429: {
                headers: {
                    /** @description seconds to wait */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
        };
    };
    "oauth.logout": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The session has ended */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `invalid_token`: the bearer is no session JWT of this service */
            401: {
                headers: {
                    /** @description `Bearer realm="oauth", error="invalid_token"` */
                    "WWW-Authenticate"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OAuthError"];
                };
            };
        };
    };
    "oauth.jwks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A JSON Web Key Set */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Jwks"];
                };
            };
        };
    };
    "oauth.metadata": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The metadata */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuthorizationServerMetadata"];
                };
            };
        };
    };
    "oauth.metadataForIssuer": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The metadata */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuthorizationServerMetadata"];
                };
            };
        };
    };
    "oauth.resourceMetadata": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The metadata */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProtectedResourceMetadata"];
                };
            };
        };
    };
    "oauth.resourceMetadataForV1": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The metadata */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProtectedResourceMetadata"];
                };
            };
        };
    };
}
