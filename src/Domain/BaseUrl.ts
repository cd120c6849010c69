/**
 * The service's public address: `BASE_URL` (without a trailing slash) when set, else the scheme and host the client
 * used (`X-Forwarded-Proto: https` → `https`), so a server on a port picked at start-up (`PORT=0`) still names
 * itself correctly. The one derivation behind `Link` headers (src/Contract/Links.ts) and the OAuth issuer and JWT
 * `iss`/`aud` (src/Auth/Issuer.ts). In production set `BASE_URL`.
 */
import { Option } from "effect"

/** A `Host` header this server can put in a URL: a name or IPv4 address, or a bracketed IPv6 one, and a port. */
const USABLE_HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$/

/**
 * `None` when `BASE_URL` is unset and the `Host` header is missing or is not a host name, so no client-given text
 * that is not a host ever reaches URL building.
 */
export const publicBaseUrl = (
  configured: Option.Option<URL>,
  headers: { readonly [name: string]: string | undefined }
): Option.Option<string> =>
  Option.match(configured, {
    onSome: (url) => Option.some(url.toString().replace(/\/+$/, "")),
    onNone: () => {
      const host = headers.host
      if (host === undefined || !USABLE_HOST.test(host)) return Option.none()
      const base = `${headers["x-forwarded-proto"] === "https" ? "https" : "http"}://${host}`
      return URL.canParse(base) ? Option.some(base) : Option.none()
    }
  })
