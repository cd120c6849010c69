/**
 * JWT sessions: Ed25519 (`EdDSA`) signing keys kept in the database (made on first start, rotated by
 * `bun run cli jwt-keys rotate`) or given as `JWT_PRIVATE_KEY`; signing a session and verifying a bearer JWT with
 * the algorithm pinned and `iss`, `aud` and `exp` checked with 30 s of clock skew.
 */
import { Effect, Option, Redacted } from "effect"
import * as jose from "jose"
import { AuthConfig } from "../Config.js"
import { Unauthorized } from "../Domain/Errors.js"
import { randomBase62 } from "../Domain/Ids.js"
import type { Principal } from "../Domain/Principal.js"
import { type Scope, scopeNames } from "../Domain/Scopes.js"
import { nowIso } from "../Domain/Time.js"
import { traced } from "../Observability/Traced.js"
import { exclusively } from "../Sql/Locks.js"
import { orDie } from "../Sql/Repository.js"
import type { Issuer } from "./Issuer.js"
import { type KeyRow, SigningKeysRepo } from "./Repo.js"

export const JWT_TTL_SECONDS = 3600
export const CLOCK_SKEW_SECONDS = 30
/** How long a verification key found in the database is used without looking it up again. */
const VERIFIER_KEPT_MS = 60_000
const ALG = "EdDSA"

/** A session acts as the user themselves: every scope. */
export const SESSION_SCOPES: ReadonlyArray<Scope> = scopeNames

interface PublicJwk {
  readonly kty: string
  readonly crv: string
  readonly x: string
}

const publicPart = (jwk: jose.JWK): PublicJwk => {
  if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.x !== "string") {
    throw new Error("JWT_PRIVATE_KEY must be an Ed25519 private key (PKCS#8 PEM or JWK)")
  }
  return { kty: jwk.kty, crv: jwk.crv, x: jwk.x }
}

const newKeyRow = Effect.promise(async (): Promise<KeyRow> => {
  const { privateKey } = await jose.generateKeyPair(ALG, { crv: "Ed25519", extractable: true })
  const privateJwk = await jose.exportJWK(privateKey)
  const publicJwk = publicPart(privateJwk)
  const kid = await jose.calculateJwkThumbprint(publicJwk)
  return {
    kid,
    private_jwk: JSON.stringify(privateJwk),
    public_jwk: JSON.stringify(publicJwk),
    created_at: nowIso(),
    retired_at: null
  }
})

const importKey = (jwk: string) =>
  Effect.promise(async () => {
    const key = await jose.importJWK(JSON.parse(jwk), ALG)
    if (key instanceof Uint8Array) throw new Error("expected an asymmetric key")
    return key
  })

/** `JWT_PRIVATE_KEY`: a PKCS#8 PEM or a JWK. */
const fromConfigured = (text: string) =>
  Effect.tryPromise({
    try: async () => {
      const trimmed = text.trim()
      const privateJwk: jose.JWK = trimmed.startsWith("{")
        ? JSON.parse(trimmed)
        : await jose.exportJWK(await jose.importPKCS8(trimmed, ALG, { extractable: true }))
      const publicJwk = publicPart(privateJwk)
      if (typeof privateJwk.d !== "string") throw new Error("JWT_PRIVATE_KEY is a public key; a private key is needed")
      const privateKey = await jose.importJWK({ ...privateJwk, alg: ALG }, ALG)
      const publicKey = await jose.importJWK({ ...publicJwk, alg: ALG }, ALG)
      if (privateKey instanceof Uint8Array || publicKey instanceof Uint8Array)
        throw new Error("expected an asymmetric key")
      const kid = await jose.calculateJwkThumbprint(publicJwk)
      return { kid, privateKey, publicKey, publicJwk }
    },
    catch: (error) => new Error(`JWT_PRIVATE_KEY is not a usable Ed25519 private key: ${String(error)}`)
  })

export class SigningKeys extends Effect.Service<SigningKeys>()("SigningKeys", {
  dependencies: [SigningKeysRepo.Default],
  effect: Effect.gen(function* () {
    const repo = orDie(yield* SigningKeysRepo)
    const config = yield* Effect.orDie(AuthConfig)
    const configured = yield* Option.match(config.jwtPrivateKey, {
      onNone: () => Effect.succeed(Option.none()),
      onSome: (pem) => Effect.map(Effect.orDie(fromConfigured(Redacted.value(pem))), Option.some)
    })

    /**
     * On first start (no active key yet) a key is made, by one process: replicas starting together take turns (a
     * lock on PostgreSQL), and the later ones find the first one's key.
     */
    if (Option.isNone(configured)) {
      yield* Effect.orDie(
        exclusively(
          "signingKeys",
          Effect.gen(function* () {
            const active = yield* repo.activeCount
            if (active > 0) return
            const row = yield* newKeyRow
            yield* repo.insert(row)
            yield* Effect.logDebug("made a JWT signing key", { kid: row.kid })
          })
        )
      )
    }

    const cache = new Map<string, CryptoKey>()
    const cached = (cacheKey: string, jwk: string) =>
      Effect.suspend(() => {
        const hit = cache.get(cacheKey)
        return hit !== undefined
          ? Effect.succeed(hit)
          : Effect.tap(importKey(jwk), (key) => Effect.sync(() => cache.set(cacheKey, key)))
      })

    /** Retired keys verify (and stay in the JWKS) until the last token they signed has expired. */
    const oldestStillValid = () => new Date(Date.now() - (JWT_TTL_SECONDS + CLOCK_SKEW_SECONDS) * 1000).toISOString()

    const signingKey = Effect.gen(function* () {
      if (Option.isSome(configured)) return { kid: configured.value.kid, key: configured.value.privateKey }
      const row = yield* repo.newestActive
      if (Option.isNone(row)) return yield* Effect.dieMessage("no active JWT signing key")
      return { kid: row.value.kid, key: yield* cached(`private:${row.value.kid}`, row.value.private_jwk) }
    })

    /**
     * A key found verifying is taken without a lookup for `VERIFIER_KEPT_MS` after: a key retired meanwhile (by any
     * process) still verifies for an hour and a half, far longer, so nothing is accepted that a lookup would refuse.
     * This keeps a request with a session JWT to one round trip, its session's (src/Sessions/Credentials.ts).
     */
    const verifiedAt = new Map<string, number>()
    const verificationKey = Effect.fnUntraced(function* (kid: string) {
      if (Option.isSome(configured)) {
        return configured.value.kid === kid ? Option.some(configured.value.publicKey) : Option.none()
      }
      const seen = verifiedAt.get(kid)
      const known = cache.get(`public:${kid}`)
      if (seen !== undefined && known !== undefined && Date.now() - seen < VERIFIER_KEPT_MS) return Option.some(known)
      const row = yield* repo.findVerifying(kid, oldestStillValid())
      if (Option.isNone(row)) {
        verifiedAt.delete(kid)
        return Option.none()
      }
      const key = yield* cached(`public:${row.value.kid}`, row.value.public_jwk)
      verifiedAt.set(kid, Date.now())
      return Option.some(key)
    })

    /** `GET {auth_url}/jwks.json` */
    const jwks = Effect.gen(function* () {
      if (Option.isSome(configured)) {
        return { keys: [{ ...configured.value.publicJwk, kid: configured.value.kid, alg: ALG, use: "sig" }] }
      }
      const rows = yield* repo.listVerifying(oldestStillValid())
      return {
        keys: rows.map((row) => {
          const jwk: PublicJwk = JSON.parse(row.public_jwk)
          return { ...jwk, kid: row.kid, alg: ALG, use: "sig" }
        })
      }
    })

    /** `bun run cli jwt-keys rotate`: retires the active key(s) and makes a new one. */
    const rotate = Effect.gen(function* () {
      const now = nowIso()
      const row = yield* newKeyRow
      const retired = yield* repo.rotate({ ...row, created_at: now })
      return {
        kid: row.kid,
        retired,
        note: Option.isSome(configured)
          ? "JWT_PRIVATE_KEY is set: the server signs with that key, not this one"
          : undefined
      }
    }).pipe(Effect.withSpan("SigningKeys.rotate"))

    /**
     * A session JWT for a user who signed in: `sid` names its row in `sessions` (src/Sessions/Sessions.ts); it is
     * issued when the session started and expires with it (`issuedAt`, `expiresAt`, seconds), so it lasts exactly
     * the session's time even when signed in the next second.
     */
    const signSession = traced("SigningKeys.signSession")(function* (
      user: { readonly id: string; readonly org_id: string },
      issuer: Issuer,
      session: { readonly id: string; readonly issuedAt: number; readonly expiresAt: number }
    ) {
      const { kid, key } = yield* signingKey
      return yield* Effect.promise(() =>
        new jose.SignJWT({ org: user.org_id, scope: SESSION_SCOPES.join(" "), sid: session.id })
          .setProtectedHeader({ alg: ALG, kid, typ: "JWT" })
          .setSubject(user.id)
          .setIssuer(issuer.authUrl)
          .setAudience(issuer.audience)
          .setIssuedAt(session.issuedAt)
          .setExpirationTime(session.expiresAt)
          .setJti(randomBase62(24))
          .sign(key)
      )
    })

    /**
     * A token signed by us for another address (minted through `127.0.0.1`, used through `localhost`): say so.
     * Claims are checked after the signature, so the issuer named here is one this server signed.
     */
    const issuerMismatch = (error: unknown, issuer: Issuer): Unauthorized | undefined => {
      if (
        !(error instanceof jose.errors.JWTClaimValidationFailed) ||
        (error.claim !== "iss" && error.claim !== "aud")
      ) {
        return undefined
      }
      const given = error.claim === "iss" ? error.payload.iss : error.payload.aud
      const expected = error.claim === "iss" ? issuer.authUrl : issuer.audience
      return new Unauthorized({
        message:
          `The JWT's ${error.claim} is ${JSON.stringify(given)} but this server is ${JSON.stringify(expected)}: ` +
          "it was issued through another address (host name or scheme). Use the address the token was made " +
          "through, or set BASE_URL so that every address shares one issuer"
      })
    }

    /**
     * A bearer JWT → the principal it names (its credential id is the session's `sid`), or 401 for anything wrong
     * with it. Whether the session is still live is the caller's to check (src/Sessions/Sessions.ts).
     */
    const verify = traced("SigningKeys.verify")(function* (token: string, issuer: Issuer) {
      const invalid = new Unauthorized({ message: "The JWT is invalid or expired" })
      const header = yield* Effect.try({ try: () => jose.decodeProtectedHeader(token), catch: () => invalid })
      if (header.alg !== ALG || typeof header.kid !== "string") return yield* invalid
      const key = yield* verificationKey(header.kid)
      if (Option.isNone(key)) return yield* invalid
      const { payload } = yield* Effect.tryPromise({
        try: () =>
          jose.jwtVerify(token, key.value, {
            algorithms: [ALG],
            issuer: issuer.authUrl,
            audience: issuer.audience,
            clockTolerance: CLOCK_SKEW_SECONDS,
            requiredClaims: ["sub", "exp", "iat", "jti"]
          }),
        catch: (error) => issuerMismatch(error, issuer) ?? invalid
      })
      if (
        typeof payload.sub !== "string" ||
        typeof payload.org !== "string" ||
        typeof payload.scope !== "string" ||
        typeof payload.sid !== "string"
      ) {
        return yield* invalid
      }
      const granted = payload.scope.split(" ")
      const principal: Principal = {
        userId: payload.sub,
        orgId: payload.org,
        scopes: scopeNames.filter((scope) => granted.includes(scope)),
        credential: { kind: "jwt", id: payload.sid }
      }
      return principal
    })

    return { jwks, rotate, signSession, verify } as const
  })
}) {}
