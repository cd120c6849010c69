import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import { Context, Schema } from "effect"
import { ApiErrors } from "../Domain/Errors.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import type { Scope } from "../Domain/Scopes.js"

/**
 * Bearer authentication for every `/v1` endpoint. One middleware for every kind of token (API key, OAuth access
 * token, session JWT), each producing the same `Principal`. It also enforces the endpoint's `RequiredScopes`, so a
 * scope is declared once, next to its endpoint. Its failures (401, 403, 429) are declared here, once, and so
 * appear on every endpoint of a group that uses it. The implementation is src/Http/Authentication.ts.
 */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: Schema.Union(ApiErrors.Unauthorized, ApiErrors.Forbidden, ApiErrors.RateLimited),
  provides: CurrentPrincipal,
  security: {
    bearer: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(
        OpenApi.Description,
        "`Authorization: Bearer <token>` where the token is an API key (`pcs_…`), an OAuth access token (`pco_…`) " +
          "or a session JWT (from `POST /oauth/login`)"
      )
    )
  }
}) {}

/** The scopes an endpoint needs (any one of), declared beside the endpoint with `.annotate(RequiredScopes, …)`. */
export class RequiredScopes extends Context.Tag("RequiredScopes")<RequiredScopes, ReadonlyArray<Scope>>() {}
