/**
 * OAuth clients: registration (by operators through the CLI, or by a user through `/v1/oauth-clients`), lookup,
 * and client authentication at the token and revocation endpoints. Secrets are shown once, at registration and at
 * rotation, and kept as SHA-256. A user's clients are theirs alone: another user's client, and the operator's,
 * are not found; OAuth access tokens cannot manage clients (as they cannot manage API keys).
 */
import { Effect, Option, Schema } from "effect"
import { type AuditAction, changesOf } from "../Domain/Audit.js"
import { Forbidden, NotFound, ValidationFailed } from "../Domain/Errors.js"
import { idPattern, makeId, OAuthClientId } from "../Domain/Ids.js"
import type { ListQuery } from "../Domain/Lists.js"
import {
  MAX_REDIRECT_URIS,
  type NewOAuthClient,
  OAuthClient,
  type OAuthClientPatch,
  OAuthClientRecord,
  type OAuthClientSort,
  type OAuthClientWithSecret,
  OAuthError,
  redirectUriProblem
} from "../Domain/OAuth.js"
import { TrimmedName } from "../Domain/Payload.js"
import type { Principal } from "../Domain/Principal.js"
import { sameHash, sha256Hex } from "../Domain/Secrets.js"
import { nowIso } from "../Domain/Time.js"
import { type AuditOptions, Events } from "../Events/Events.js"
import { traced } from "../Observability/Traced.js"
import { readForWrite } from "../Sql/Preconditions.js"
import { dieOnSqlError, orDie } from "../Sql/Repository.js"
import { OAuthAppsRepo } from "./Apps/Repo.js"
import { OAuthRepo } from "./Repo.js"
import { newClientSecret } from "./Secrets.js"

const CLIENT_ID = idPattern("client")

/**
 * OAuth access tokens manage no clients: an app must not be able to register or change apps. A rule of the
 * credential, not of stored state: the `Idempotent` wrapper checks it before a key's replay too (`mayManage`).
 */
const refuseOAuth = (principal: Principal): Effect.Effect<void, Forbidden> =>
  principal.credential.kind === "oauth"
    ? Effect.fail(new Forbidden({ message: "OAuth access tokens cannot manage OAuth clients" }))
    : Effect.void

export interface NewClient {
  readonly name: string
  readonly redirectUris: ReadonlyArray<string>
  readonly isPublic: boolean
}

/** A registration as the operator sees it, once: the secret (confidential clients) is not shown again. */
export interface RegisteredClient {
  readonly client_id: string
  readonly client_secret?: string
  readonly name: string
  readonly redirect_uris: ReadonlyArray<string>
  readonly public: boolean
}

/** A client's credentials as presented (by HTTP Basic or in the body): its id, and its secret if one was sent. */
export interface ClientCredentials {
  readonly id: string
  readonly secret: Option.Option<string>
}

export class OAuthClients extends Effect.Service<OAuthClients>()("OAuthClients", {
  dependencies: [OAuthRepo.Default, OAuthAppsRepo.Default, Events.Default],
  effect: Effect.gen(function* () {
    const repo = orDie(yield* OAuthRepo)
    const apps = orDie(yield* OAuthAppsRepo)
    const events = yield* Events
    const transaction = <A, E, R>(change: Effect.Effect<A, E, R>) => dieOnSqlError(events.transaction(change))

    /** The audit record of a change to a client (never its secret), in its owner's log (none for the operator's). */
    const audit = (
      action: AuditAction,
      client: { readonly id: string; readonly name: string },
      ownerId: string | null,
      changes?: AuditOptions["changes"]
    ) => events.record(action, { type: "oauth_client", id: client.id }, { user: ownerId, name: client.name, changes })

    /**
     * The grants a client's deletion takes with it (by the foreign keys), read first: each is recorded as revoked in
     * the log of the user who gave it, named by the client, once the client is deleted (`recordGone`).
     */
    const grantsOf = (clientId: string) => apps.grantsOfClient(clientId)
    const recordGone = (grants: ReadonlyArray<{ readonly id: string; readonly user_id: string }>, name: string) =>
      Effect.forEach(
        grants,
        (grant) =>
          events.record(
            "authorization.revoked",
            { type: "authorization", id: grant.id },
            { user: grant.user_id, name }
          ),
        { discard: true }
      )

    /**
     * A client by its id. Ids come from requests (a form, a query, HTTP Basic): one that is not a client id (NUL
     * bytes and invalid text included, which PostgreSQL refuses outright) is unknown without a query.
     */
    const find = traced("OAuthClients.find")(function* (id: string) {
      if (!CLIENT_ID.test(id)) return Option.none<OAuthClient>()
      return yield* repo.findClient(id)
    })

    /** Makes the client (the API's body is already checked by its schema; the CLI's flags are checked here). */
    const insert = Effect.fnUntraced(function* (input: NewClient, ownerId: string | null) {
      const redirectUris = Array.from(new Set(input.redirectUris))
      const secret = input.isPublic ? Option.none() : Option.some(newClientSecret())
      const client = new OAuthClient({
        id: makeId("client"),
        name: input.name,
        secretHash: Option.getOrNull(Option.map(secret, sha256Hex)),
        redirectUris,
        isPublic: input.isPublic
      })
      const createdAt = nowIso()
      yield* repo
        .insertClient({ client, createdAt, ownerId })
        .pipe(Effect.zipRight(audit("oauth_client.created", client, ownerId)), transaction)
      return { client, secret, createdAt }
    })

    /** `bun run cli oauth-clients create`: the same rules as the API's, on the CLI's flags. */
    const create = traced("OAuthClients.create")(function* (input: NewClient) {
      const name = yield* Schema.decodeUnknown(TrimmedName)(input.name).pipe(
        Effect.mapError(() => ValidationFailed.field("name", "must be 1 to 100 characters"))
      )
      if (input.redirectUris.length === 0)
        return yield* ValidationFailed.field("redirect-uri", "at least one is required")
      if (input.redirectUris.length > MAX_REDIRECT_URIS) {
        return yield* ValidationFailed.field("redirect-uri", `at most ${MAX_REDIRECT_URIS} are allowed`)
      }
      for (const uri of input.redirectUris) {
        const problem = redirectUriProblem(uri)
        if (problem !== undefined) return yield* ValidationFailed.field("redirect-uri", `${problem}: ${uri}`)
      }
      const { client, secret } = yield* insert({ ...input, name }, null)
      const registered: RegisteredClient = {
        client_id: client.id,
        ...Option.match(secret, { onNone: () => ({}), onSome: (value) => ({ client_secret: value }) }),
        name,
        redirect_uris: client.redirectUris,
        public: input.isPublic
      }
      return registered
    })

    /** `POST /v1/oauth-clients`: a client owned by the caller; a confidential client's secret is in this answer only. */
    const register = traced("OAuthClients.register")(function* (principal: Principal, input: NewOAuthClient) {
      yield* refuseOAuth(principal)
      const isPublic = input.public ?? false
      const { client, createdAt, secret } = yield* insert(
        { name: input.name, redirectUris: input.redirect_uris, isPublic },
        principal.userId
      )
      const created: OAuthClientWithSecret = {
        id: OAuthClientId.make(client.id),
        name: client.name,
        redirect_uris: client.redirectUris,
        public: isPublic,
        created_at: createdAt,
        updated_at: createdAt,
        ...Option.match(secret, { onNone: () => ({}), onSome: (value) => ({ client_secret: value }) })
      }
      return created
    })

    const list = traced("OAuthClients.list")(function* (principal: Principal, query: ListQuery<OAuthClientSort>) {
      yield* refuseOAuth(principal)
      return yield* apps.listClients(principal.userId, query)
    })

    const get = traced("OAuthClients.get")(function* (principal: Principal, id: OAuthClientId) {
      yield* refuseOAuth(principal)
      const found = yield* apps.findClient(principal.userId, id)
      if (Option.isNone(found)) return yield* NotFound.resource("OAuth client", id)
      return found.value
    })

    /** `PUT /v1/oauth-clients/:id`: name and redirect URIs. Codes already issued keep the URI they were bound to. */
    const update = traced("OAuthClients.update")(function* (
      principal: Principal,
      id: OAuthClientId,
      patch: OAuthClientPatch
    ) {
      return yield* Effect.gen(function* () {
        const before = yield* readForWrite(OAuthClientRecord, "oauth_clients", id, get(principal, id))
        const changed = yield* apps.updateClient({
          ownerId: principal.userId,
          id,
          name: patch.name,
          redirectUris: patch.redirect_uris === undefined ? undefined : Array.from(new Set(patch.redirect_uris)),
          now: nowIso()
        })
        if (!changed) return yield* NotFound.resource("OAuth client", id)
        const after = yield* get(principal, id)
        yield* audit(
          "oauth_client.updated",
          after,
          principal.userId,
          changesOf(before, after, ["name", "redirect_uris"])
        )
        return after
      }).pipe(transaction)
    })

    /** `DELETE /v1/oauth-clients/:id`: the client goes with every grant, pending authorization, code and token. */
    const deleteOwned = traced("OAuthClients.delete")(function* (principal: Principal, id: OAuthClientId) {
      const deleted = yield* Effect.gen(function* () {
        const found = yield* readForWrite(OAuthClientRecord, "oauth_clients", id, get(principal, id))
        const grants = yield* grantsOf(id)
        const done = yield* apps.deleteClient({ ownerId: principal.userId, id })
        if (done) {
          yield* audit("oauth_client.deleted", found, principal.userId)
          yield* recordGone(grants, found.name)
        }
        return done
      }).pipe(transaction)
      if (!deleted) return yield* NotFound.resource("OAuth client", id)
    })

    /** `POST /v1/oauth-clients/:id/rotate-secret`: a new secret, shown this once; the old one stops working at once. */
    const rotateOwned = traced("OAuthClients.rotateOwned")(function* (principal: Principal, id: OAuthClientId) {
      const found = yield* get(principal, id)
      if (found.public)
        return yield* ValidationFailed.field("public", "the client is public: it has no secret to rotate")
      const secret = newClientSecret()
      const now = nowIso()
      yield* apps
        .setClientSecret({ ownerId: principal.userId, id, secretHash: sha256Hex(secret), now })
        .pipe(Effect.zipRight(audit("oauth_client.secret_rotated", found, principal.userId)), transaction)
      const rotated: OAuthClientWithSecret = { ...found, updated_at: now, client_secret: secret }
      return rotated
    })

    /**
     * Client authentication (client_secret_basic, client_secret_post, or none for a public client). Every failure
     * is the same `invalid_client`, whether the client is unknown or the secret wrong.
     */
    const authenticate = traced("OAuthClients.authenticate")(function* (credentials: ClientCredentials) {
      const invalidClient = OAuthError.of("invalid_client", "Client authentication failed")
      const found = yield* find(credentials.id)
      if (Option.isNone(found)) return yield* invalidClient
      const client = found.value
      if (client.isPublic) {
        // A public client has no secret: sending one means the client is misconfigured.
        if (Option.isSome(credentials.secret) && credentials.secret.value !== "") return yield* invalidClient
        return client
      }
      if (Option.isNone(credentials.secret) || client.secretHash === null) return yield* invalidClient
      if (!sameHash(sha256Hex(credentials.secret.value), client.secretHash)) return yield* invalidClient
      return client
    })

    /** `cli oauth-clients list`: every client, oldest first, never a secret. */
    const listAll = traced("OAuthClients.listAll")(function* () {
      return yield* repo.listClients()
    })

    /**
     * `cli oauth-clients delete`: the client goes with its pending authorizations, codes and tokens. The record is
     * its owner's (in their security log) when a user registered it through the API.
     */
    const remove = traced("OAuthClients.remove")(function* (id: string) {
      const found = yield* repo.findClientSummary(id)
      if (Option.isNone(found)) return yield* NotFound.resource("OAuth client", id)
      const summary = found.value
      const deleted = yield* Effect.flatMap(grantsOf(id), (grants) =>
        repo.deleteClient(id).pipe(
          Effect.tap(
            Option.match({
              onNone: () => Effect.void,
              onSome: (row) =>
                Effect.zipRight(
                  audit("oauth_client.deleted", { id, name: summary.name }, row.owner_id),
                  recordGone(grants, summary.name)
                )
            })
          )
        )
      ).pipe(transaction)
      if (Option.isNone(deleted)) return yield* NotFound.resource("OAuth client", id)
      return { client_id: id, deleted: true } as const
    })

    /**
     * `cli oauth-clients rotate-secret`: a new secret, shown this once; the old one stops working at once. Recorded
     * for the client's owner, as `remove` is.
     */
    const rotateSecret = traced("OAuthClients.rotateSecret")(function* (id: string) {
      const found = yield* repo.findClientSummary(id)
      if (Option.isNone(found)) return yield* NotFound.resource("OAuth client", id)
      if (found.value.public) return yield* ValidationFailed.field("client", "is public: it has no secret to rotate")
      const secret = newClientSecret()
      const rotated = yield* repo.setClientSecret({ id, secretHash: sha256Hex(secret) }).pipe(
        Effect.tap(
          Option.match({
            onNone: () => Effect.void,
            onSome: (row) => audit("oauth_client.secret_rotated", { id, name: found.value.name }, row.owner_id)
          })
        ),
        transaction
      )
      if (Option.isNone(rotated)) return yield* NotFound.resource("OAuth client", id)
      return { ...found.value, client_secret: secret }
    })

    return {
      find,
      create,
      authenticate,
      listAll,
      remove,
      rotateSecret,
      register,
      list,
      get,
      update,
      delete: deleteOwned,
      rotateOwned,
      mayManage: refuseOAuth
    } as const
  })
}) {}
