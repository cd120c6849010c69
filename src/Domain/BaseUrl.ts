/**
 * The service's public address: `BASE_URL` (without a trailing slash) when set, else the scheme and host the client
 * used (`X-Forwarded-Proto: https` → `https`), so a server on a port picked at start-up (`PORT=0`) still names
 * itself correctly. The one derivation behind `Link` headers (src/Contract/Links.ts) and the OAuth issuer and JWT
 * `iss`/`aud` (src/Auth/Issuer.ts). In production set `BASE_URL`.
 */
import { Option } from "effect"

export const publicBaseUrl = (
  configured: Option.Option<URL>,
  headers: { readonly [name: string]: string | undefined }
): string =>
  Option.match(configured, {
    onSome: (url) => url.toString().replace(/\/+$/, ""),
    onNone: () => `${headers["x-forwarded-proto"] === "https" ? "https" : "http"}://${headers["host"] ?? "localhost"}`
  })
