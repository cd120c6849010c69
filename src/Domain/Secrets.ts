/**
 * Secrets are stored only as their SHA-256 (API keys, OAuth client secrets, codes, tokens, CSRF tokens), and
 * compared in constant time. The one SHA-256 helper of the service.
 */

/** SHA-256 of `value` (UTF-8), lowercase hex: the stored form of a secret. */
export const sha256Hex = (value: string): string => new Bun.CryptoHasher("sha256").update(value).digest("hex")

/** SHA-256 of `value` (UTF-8), base64url: the PKCE `S256` challenge. */
export const sha256Base64Url = (value: string): string =>
  new Bun.CryptoHasher("sha256").update(value).digest("base64url")

/** Whether two byte strings are equal, in constant time (when their lengths match). */
const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && crypto.timingSafeEqual(a, b)

/** Whether two stored hashes (hex) are the same, in constant time. */
export const sameHash = (hexA: string, hexB: string): boolean =>
  sameBytes(Buffer.from(hexA, "hex"), Buffer.from(hexB, "hex"))

/** Whether two texts are the same, in constant time (when their lengths match). */
export const sameText = (a: string, b: string): boolean => sameBytes(Buffer.from(a), Buffer.from(b))
