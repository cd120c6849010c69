/**
 * Who is calling, as every bearer kind (API key, OAuth access token, session JWT) describes it once authenticated.
 * Services take a `Principal`; the bearer middleware (src/Http/Authentication.ts) provides `CurrentPrincipal`.
 */
import { Context } from "effect"
import type { Scope } from "./Scopes.js"

export type CredentialKind = "api_key" | "oauth" | "jwt"

export interface Principal {
  readonly userId: string
  readonly orgId: string
  readonly scopes: ReadonlyArray<Scope>
  readonly credential: { readonly kind: CredentialKind; readonly id: string }
}

export class CurrentPrincipal extends Context.Tag("CurrentPrincipal")<CurrentPrincipal, Principal>() {}
