import { Context } from "effect"
import type { Scope } from "../Domain/Scopes.js"

export type CredentialKind = "api_key" | "oauth" | "jwt"

/** Who is calling, as every bearer kind describes it once authenticated. */
export interface Principal {
  readonly userId: string
  readonly orgId: string
  readonly scopes: ReadonlyArray<Scope>
  readonly credential: { readonly kind: CredentialKind; readonly id: string }
}

export class CurrentPrincipal extends Context.Tag("CurrentPrincipal")<CurrentPrincipal, Principal>() {}

/** The scopes an endpoint needs (any one of), declared beside the endpoint with `.annotate(RequiredScopes, …)`. */
export class RequiredScopes extends Context.Tag("RequiredScopes")<RequiredScopes, ReadonlyArray<Scope>>() {}
