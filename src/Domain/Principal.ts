/**
 * Who is calling, as every bearer kind (API key, OAuth access token, session JWT) describes it once authenticated.
 * Services take a `Principal`; the bearer middleware (src/Http/Authentication.ts) provides `CurrentPrincipal`.
 */
import { Context } from "effect"
import type { Scope } from "./Scopes.js"

export type CredentialKind = "api_key" | "oauth" | "jwt"

export interface Principal {
  readonly userId: string
  /**
   * The user's name as the credential's check read it with their row, which every write's event and audit record
   * names them by (src/Events/Events.ts). Absent only before that check (a session JWT verified, its session not yet
   * read): the write then reads it.
   */
  readonly name?: string
  readonly orgId: string
  readonly scopes: ReadonlyArray<Scope>
  /** The credential; an OAuth access token's carries its client (`cli_…`), which its audit records name. */
  readonly credential: { readonly kind: CredentialKind; readonly id: string; readonly clientId?: string }
}

export class CurrentPrincipal extends Context.Tag("CurrentPrincipal")<CurrentPrincipal, Principal>() {}
