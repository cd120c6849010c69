/**
 * Secrets at rest: the one module that encrypts and decrypts what the service must read back (webhook secrets, JWT
 * private keys, recorded idempotent answers). AES-256-GCM through WebCrypto, a fresh 12-byte nonce each time, the
 * row's id as associated data (a value copied to another row does not decrypt there).
 *
 * A stored value is `v1:<key id>:<base64url of nonce, ciphertext and tag>`: the version of this format, and the id of
 * the key that encrypted it (8 characters of a hash of the key, never the key), so a ring of several keys knows which
 * one decrypts it and `secrets rotate` (src/Secrets/Stored.ts) finds what the first key did not encrypt. Nothing
 * else reads or writes that format.
 *
 * The keys (`SECRETS_KEY`, src/Config.ts): the first encrypts, every one decrypts. Unset on SQLite, one key is kept
 * in `secrets.key` beside the database file (made on first start, mode 0600); with an in-memory database, a key made
 * for this process only (nothing outlives it anyway). PostgreSQL refuses to start without the setting.
 */
import { chmodSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import { parseSecretsKeys, SecretsConfig } from "../Config.js"

/** A stored value that cannot be read: not in the format, under a key the ring lacks, or altered. */
export class SecretUnreadable extends Schema.TaggedError<SecretUnreadable>()("SecretUnreadable", {
  message: Schema.String
}) {}

export interface KeyRingService {
  /** The id of the key that encrypts (the first of the ring). */
  readonly currentKeyId: string
  /** Every key's id, the encrypting one first. */
  readonly keyIds: ReadonlyArray<string>
  /** `plaintext` encrypted under the first key, for the row `rowId`. */
  readonly encrypt: (plaintext: string, rowId: string) => Effect.Effect<string>
  /** What `encrypt(plaintext, rowId)` stored, decrypted by the key it names; fails clearly, never answers garbage. */
  readonly decrypt: (stored: string, rowId: string) => Effect.Effect<string, SecretUnreadable>
}

export class KeyRing extends Context.Tag("KeyRing")<KeyRing, KeyRingService>() {}

const VERSION = "v1"
const NONCE_BYTES = 12
const TAG_BYTES = 16
const FORMAT = /^v1:([A-Za-z0-9_-]{8}):([A-Za-z0-9_-]+)$/

/** The length of every stored value's prefix (`v1:<key id>:`). */
export const PREFIX_LENGTH = `${VERSION}:xxxxxxxx:`.length

/** The prefix of the values key `keyId` encrypted. */
export const prefixOf = (keyId: string): string => `${VERSION}:${keyId}:`

/** The key id a stored value names, or none for a value not in the format (plaintext from before encryption). */
export const keyIdOf = (stored: string): Option.Option<string> => {
  const match = FORMAT.exec(stored)
  return match === null ? Option.none() : Option.some(match[1] ?? "")
}

/** A key's id: 8 base64url characters of a SHA-256 of it (never the key, nor enough to find it). */
export const keyIdFor = (key: Uint8Array): string =>
  new Bun.CryptoHasher("sha256")
    .update("project-collaboration-service secrets key id\n")
    .update(key)
    .digest("base64url")
    .slice(0, 8)

/**
 * The row id a secret is bound to (its encryption's associated data): the values of its row's primary key, joined by
 * a space (none holds one: ids, key ids, and a user's id with an `Idempotency-Key`, whose characters exclude it).
 */
export const rowIdOf = (keys: ReadonlyArray<string>): string => keys.join(" ")

const encoder = new TextEncoder()
const decoder = new TextDecoder("utf-8", { fatal: true })

/** A ring of `keys` (at least one): the first encrypts. */
export const makeKeyRing = (keys: ReadonlyArray<Uint8Array>): Effect.Effect<KeyRingService> =>
  Effect.gen(function* () {
    const imported = new Map<string, CryptoKey>()
    for (const key of keys) {
      const id = keyIdFor(key)
      if (imported.has(id)) continue
      const cryptoKey = yield* Effect.promise(() =>
        crypto.subtle.importKey("raw", Uint8Array.from(key), { name: "AES-GCM" }, false, ["encrypt", "decrypt"])
      )
      imported.set(id, cryptoKey)
    }
    const keyIds = [...imported.keys()]
    const currentKeyId = keyIds[0]
    const currentKey = currentKeyId === undefined ? undefined : imported.get(currentKeyId)
    if (currentKeyId === undefined || currentKey === undefined)
      return yield* Effect.dieMessage("a key ring needs a key")
    const currentPrefix = prefixOf(currentKeyId)

    const encrypt = (plaintext: string, rowId: string) =>
      Effect.promise(async () => {
        const nonce = crypto.getRandomValues(new Uint8Array(NONCE_BYTES))
        const sealed = await crypto.subtle.encrypt(
          { name: "AES-GCM", iv: nonce, additionalData: encoder.encode(rowId) },
          currentKey,
          encoder.encode(plaintext)
        )
        const out = new Uint8Array(NONCE_BYTES + sealed.byteLength)
        out.set(nonce)
        out.set(new Uint8Array(sealed), NONCE_BYTES)
        return currentPrefix + Buffer.from(out).toString("base64url")
      })

    const unreadable = (rowId: string, why: string) =>
      new SecretUnreadable({ message: `The secret stored for ${rowId} cannot be read: ${why}` })

    const decrypt = (stored: string, rowId: string): Effect.Effect<string, SecretUnreadable> => {
      const match = FORMAT.exec(stored)
      if (match === null) return Effect.fail(unreadable(rowId, "it is not encrypted (not in the stored format)"))
      const [, keyId = "", data = ""] = match
      const key = imported.get(keyId)
      if (key === undefined) {
        return Effect.fail(
          unreadable(
            rowId,
            `it is encrypted under key ${keyId}, which SECRETS_KEY does not hold (it holds ${keyIds.join(", ")})`
          )
        )
      }
      const bytes = Buffer.from(data, "base64url")
      if (bytes.length < NONCE_BYTES + TAG_BYTES) return Effect.fail(unreadable(rowId, "it is cut short"))
      return Effect.tryPromise({
        try: async () =>
          decoder.decode(
            await crypto.subtle.decrypt(
              { name: "AES-GCM", iv: bytes.subarray(0, NONCE_BYTES), additionalData: encoder.encode(rowId) },
              key,
              bytes.subarray(NONCE_BYTES)
            )
          ),
        catch: () => unreadable(rowId, `it does not decrypt under key ${keyId} (altered, or moved from another row)`)
      })
    }

    const ring: KeyRingService = { currentKeyId, keyIds, encrypt, decrypt }
    return ring
  })

/** A ring of the base64 keys in `text` (as `SECRETS_KEY` writes them): for tests and tools. */
export const keyRingOf = (text: string): Effect.Effect<KeyRingService> => {
  const parsed = parseSecretsKeys(text)
  return typeof parsed === "string" ? Effect.dieMessage(parsed) : makeKeyRing(parsed)
}

/** A new key, base64 (as `SECRETS_KEY` and `secrets.key` hold it). */
export const newKeyText = (): string => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64")

const isMissing = (error: unknown) =>
  error !== null && typeof error === "object" && "code" in error && error.code === "ENOENT"
const isTaken = (error: unknown) =>
  error !== null && typeof error === "object" && "code" in error && error.code === "EEXIST"

/**
 * The key in `path`, made there first if there is none: written whole to a file of its own (mode 0600), then linked
 * to `path`, which fails if another process (a replica, the CLI) made it first; then that one's key is read.
 */
const keyFile = (path: string): { readonly keys: ReadonlyArray<Uint8Array>; readonly made: boolean } => {
  const read = () => {
    const parsed = parseSecretsKeys(readFileSync(path, "utf8").trim())
    if (typeof parsed === "string") {
      throw new Error(`${path} does not hold a key: ${parsed.replace("SECRETS_KEY", "it")}`)
    }
    return parsed
  }
  try {
    return { keys: read(), made: false }
  } catch (error) {
    if (!isMissing(error)) throw error
  }
  mkdirSync(dirname(path), { recursive: true })
  const scratch = `${path}.${process.pid}.${Date.now()}.tmp`
  writeFileSync(scratch, `${newKeyText()}\n`, { mode: 0o600, flag: "wx" })
  chmodSync(scratch, 0o600)
  let made = false
  try {
    linkSync(scratch, path)
    made = true
  } catch (error) {
    if (!isTaken(error)) throw error
  } finally {
    unlinkSync(scratch)
  }
  return { keys: read(), made }
}

/**
 * The key ring of `SECRETS_KEY`, or on SQLite without it the key of `secrets.key` beside the database file (made on
 * first start, and the log says so), or for an in-memory database a key of this process's own.
 */
export const KeyRingLive = Layer.effect(
  KeyRing,
  Effect.gen(function* () {
    const { database, keys } = yield* Effect.orDie(SecretsConfig)
    if (Option.isSome(keys)) return yield* makeKeyRing(Redacted.value(keys.value))
    if (database._tag === "pg") return yield* Effect.dieMessage("SECRETS_KEY is required with PostgreSQL")
    if (database.filename === ":memory:") {
      yield* Effect.logInfo(
        "SECRETS_KEY is unset and the database is in memory: secrets at rest are encrypted under a key of this process's own"
      )
      return yield* keyRingOf(newKeyText())
    }
    const path = join(dirname(database.filename), "secrets.key")
    const found = yield* Effect.try({
      try: () => keyFile(path),
      catch: (error) => new Error(`SECRETS_KEY is unset and ${path} cannot be used: ${String(error)}`)
    }).pipe(Effect.orDie)
    if (found.made) {
      yield* Effect.logWarning(
        `SECRETS_KEY is unset: made ${path} (mode 0600), the key secrets at rest are encrypted under; back it up ` +
          "apart from the database: without it the stored webhook secrets, signing keys and recorded answers cannot " +
          "be read"
      )
    }
    const ring = yield* makeKeyRing(found.keys)
    yield* Effect.logDebug("secrets at rest: the key of secrets.key", { path, key: ring.currentKeyId })
    return ring
  })
)
