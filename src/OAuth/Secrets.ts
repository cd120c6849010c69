/**
 * The authorization server's secrets: the random values it hands out and the PKCE S256 check (RFC 7636). They are
 * stored only as SHA-256 and compared in constant time, with the helpers of src/Domain/Secrets.ts.
 */
import { randomBase62 } from "../Domain/Ids.js"
import { sameText, sha256Base64Url } from "../Domain/Secrets.js"

export const ACCESS_PREFIX = "pco_"
export const REFRESH_PREFIX = "pcr_"
export const CLIENT_SECRET_PREFIX = "pcc_"
export const ACCESS_PATTERN = /^pco_[0-9A-Za-z]{40}$/
/** A `code_challenge` or `code_verifier`: 43–128 unreserved characters. */
export const PKCE_PATTERN = /^[A-Za-z0-9._~-]{43,128}$/

/** Whether `verifier` is well-formed and its S256 transform equals `challenge` (constant time). */
export const verifierMatches = (verifier: string, challenge: string): boolean =>
  sameText(sha256Base64Url(verifier), challenge)

export const newClientSecret = () => `${CLIENT_SECRET_PREFIX}${randomBase62(40)}`
export const newAccessToken = () => `${ACCESS_PREFIX}${randomBase62(40)}`
export const newRefreshToken = () => `${REFRESH_PREFIX}${randomBase62(40)}`
export const newCode = () => randomBase62(43)
/** A pending authorization's id and its one-time form tokens. */
export const newFormSecret = () => randomBase62(32)

export const later = (seconds: number) => new Date(Date.now() + seconds * 1000).toISOString()

/** NUL, or half of a UTF-16 surrogate pair alone: text PostgreSQL cannot store (and no id or secret of ours holds). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding NUL is this pattern's purpose.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Whether `text` can reach the database as it is. */
export const storable = (text: string): boolean => !UNSTORABLE.test(text)
