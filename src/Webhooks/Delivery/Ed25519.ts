/**
 * Ed25519 webhooks (`"signature": "ed25519"`): the key pair made for one, and the `v1a` entry of its
 * `webhook-signature` (Standard Webhooks 1.0, asymmetric). The private key is kept as PKCS #8 bytes in base64 (and
 * stored encrypted, like every secret); the public key is shown as `whpk_` and the base64 of its 32 raw bytes.
 */
import { createPrivateKey, type KeyObject, sign } from "node:crypto"
import { Effect } from "effect"

export const PUBLIC_KEY_PREFIX = "whpk_"

export interface Ed25519KeyPair {
  /** PKCS #8, base64: a secret. */
  readonly privateKey: string
  /** `whpk_<base64 of the 32 raw bytes>`. */
  readonly publicKey: string
}

/** A new key pair, made with WebCrypto. */
export const generateKeyPair: Effect.Effect<Ed25519KeyPair> = Effect.promise(async () => {
  const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])
  if (!("privateKey" in pair)) throw new Error("Ed25519 key generation answered a single key")
  const [pkcs8, raw] = await Promise.all([
    crypto.subtle.exportKey("pkcs8", pair.privateKey),
    crypto.subtle.exportKey("raw", pair.publicKey)
  ])
  return {
    privateKey: Buffer.from(pkcs8).toString("base64"),
    publicKey: `${PUBLIC_KEY_PREFIX}${Buffer.from(raw).toString("base64")}`
  }
}).pipe(Effect.withSpan("Webhooks.generateKeyPair"))

/**
 * Private keys imported once each and kept by their PKCS #8 text (a rotated key is a new text), so an attempt only
 * signs. Bounded: cleared when full, like the worker's decrypted secrets.
 */
const imported = new Map<string, KeyObject>()

const privateKeyOf = (privateKey: string): KeyObject => {
  const kept = imported.get(privateKey)
  if (kept !== undefined) return kept
  const key = createPrivateKey({ key: Buffer.from(privateKey, "base64"), format: "der", type: "pkcs8" })
  if (imported.size >= 10_000) imported.clear()
  imported.set(privateKey, key)
  return key
}

/** One `webhook-signature` entry: `v1a,<base64 Ed25519 signature of "{id}.{timestamp}.{body}">`. */
export const ed25519Signature = (privateKey: string, id: string, timestamp: number, body: string): string =>
  `v1a,${sign(null, Buffer.from(`${id}.${timestamp}.${body}`, "utf8"), privateKeyOf(privateKey)).toString("base64")}`
