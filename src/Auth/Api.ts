import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ApiErrors } from "../Domain/Errors.js"
import { CurrentPrincipal } from "./Principal.js"

/**
 * Bearer authentication for every `/v1` endpoint. One middleware for every kind of token (API key today; OAuth
 * access tokens and JWTs beside it), each producing the same `Principal`. It also enforces the endpoint's
 * `RequiredScopes`, so a scope is declared once, next to its endpoint.
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
