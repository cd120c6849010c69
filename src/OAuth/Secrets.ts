/**
 * What the authorization server keeps of its secrets: SHA-256 (hex) of client secrets, codes and tokens,
 * compared in constant time; the PKCE S256 check (RFC 7636); the random values it hands out.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import { randomBase62 } from "../Domain/Ids.js"

export const ACCESS_PREFIX = "pco_"
export const REFRESH_PREFIX = "pcr_"
export const CLIENT_SECRET_PREFIX = "pcc_"
export const ACCESS_PATTERN = /^pco_[0-9A-Za-z]{40}$/
/** A `code_challenge` or `code_verifier`: 43–128 unreserved characters. */
export const PKCE_PATTERN = /^[A-Za-z0-9._~-]{43,128}$/

export const sha256hex = (value: string): string => createHash("sha256").update(value).digest("hex")

/** Two hex digests, compared in constant time. */
export const sameHash = (hexA: string, hexB: string): boolean => {
  const a = Buffer.from(hexA, "hex")
  const b = Buffer.from(hexB, "hex")
  return a.length === b.length && timingSafeEqual(a, b)
}

/** Whether `verifier` is well-formed and its S256 transform equals `challenge` (constant time). */
export const verifierMatches = (verifier: string, challenge: string): boolean => {
  const a = Buffer.from(createHash("sha256").update(verifier).digest("base64url"))
  const b = Buffer.from(challenge)
  return a.length === b.length && timingSafeEqual(a, b)
}

export const newClientSecret = () => `${CLIENT_SECRET_PREFIX}${randomBase62(40)}`
export const newAccessToken = () => `${ACCESS_PREFIX}${randomBase62(40)}`
export const newRefreshToken = () => `${REFRESH_PREFIX}${randomBase62(40)}`
export const newCode = () => randomBase62(43)
/** A pending authorization's id and its one-time form tokens. */
export const newFormSecret = () => randomBase62(32)

export const later = (seconds: number) => new Date(Date.now() + seconds * 1000).toISOString()
