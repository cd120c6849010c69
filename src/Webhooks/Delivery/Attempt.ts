/**
 * One delivery attempt: POST the stored event bytes, signed, to the checked address; 2xx succeeds, anything
 * else (3xx — redirects are not followed —, 4xx, 5xx, connection errors, the time-out) fails.
 */

import { createHmac } from "node:crypto"
import { isIP } from "node:net"
import { Context, Duration, Effect } from "effect"
import type { WebhookSignature } from "../../Domain/Webhook.js"
import { ed25519Signature } from "./Ed25519.js"
import { type Resolver, resolveTarget, systemResolver } from "./Targets.js"

export const USER_AGENT = "ProjectCollaborationService-Webhooks/1.0"
const RESPONSE_BODY_LIMIT = 4096

/** Response headers are kept up to this many characters (names and values), as the body's first 4 KiB are. */
const RESPONSE_HEADERS_LIMIT = 8192

/** `sha256=<lowercase hex HMAC-SHA256 of the raw body, keyed with the secret's UTF-8 bytes>` */
export const signature = (secret: string, body: string): string =>
  `sha256=${createHmac("sha256", Buffer.from(secret, "utf8")).update(body, "utf8").digest("hex")}`

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/**
 * The Standard Webhooks key of a secret: the base64-decoded part after `whsec_` when the secret has that form and
 * it decodes to at least 16 bytes (every generated secret does), else the secret's UTF-8 bytes.
 */
export const signingKey = (secret: string): Buffer => {
  if (secret.startsWith("whsec_")) {
    const encoded = secret.slice(6)
    if (BASE64.test(encoded)) {
      const key = Buffer.from(encoded, "base64")
      if (key.byteLength >= 16) return key
    }
  }
  return Buffer.from(secret, "utf8")
}

/** One `webhook-signature` entry: `v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`. */
export const standardSignature = (key: Buffer, id: string, timestamp: number, body: string): string =>
  `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.`, "utf8").update(body, "utf8").digest("base64")}`

/**
 * The signature headers of one attempt at `timestamp` (Unix seconds): the spec's `X-Service-Signature` with the
 * current secret, and the Standard Webhooks three, whose signature lists the current secret's entry first and,
 * while a rotated-out secret still verifies, its entry second. Each key is derived once per attempt.
 */
export interface SignatureHeaders {
  readonly "webhook-id": string
  readonly "webhook-timestamp": string
  readonly "webhook-signature": string
  /** Only for a webhook with a shared secret (`hmac`). */
  readonly "x-service-signature"?: string
}

export const signatureHeaders = (
  request: Pick<AttemptRequest, "signature" | "secret" | "previousSecret" | "eventId" | "body">,
  timestamp: number
): SignatureHeaders => {
  if (request.signature === "ed25519") {
    // No shared secret, so no `X-Service-Signature`: the `v1a` entries, the current key's first.
    const current = ed25519Signature(request.secret, request.eventId, timestamp, request.body)
    return {
      "webhook-id": request.eventId,
      "webhook-timestamp": String(timestamp),
      "webhook-signature":
        request.previousSecret === null
          ? current
          : `${current} ${ed25519Signature(request.previousSecret, request.eventId, timestamp, request.body)}`
    }
  }
  const current = standardSignature(signingKey(request.secret), request.eventId, timestamp, request.body)
  return {
    "x-service-signature": signature(request.secret, request.body),
    "webhook-id": request.eventId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature":
      request.previousSecret === null
        ? current
        : `${current} ${standardSignature(signingKey(request.previousSecret), request.eventId, timestamp, request.body)}`
  }
}

/**
 * What an attempt's TLS connections trust: the system's certificate authorities, unless a layer says otherwise. Only
 * the tests say otherwise (a local receiver's self-signed certificate); no setting reaches it.
 */
export class DeliveryTrust extends Context.Reference<DeliveryTrust>()("DeliveryTrust", {
  defaultValue: (): { readonly ca?: string } => ({})
}) {}

export interface AttemptOptions {
  readonly timeout: Duration.Duration
  readonly allowPrivate: boolean
  /** The system's unless given (`TargetResolver`). */
  readonly resolver?: Resolver
  /** Certificate authorities to trust instead of the system's (`DeliveryTrust`: tests only). */
  readonly ca?: string | undefined
}

export interface AttemptRequest {
  readonly url: string
  /**
   * `hmac` (when not given): `secret` is the shared secret; `ed25519`: the private key (PKCS #8, base64),
   * `previousSecret` too.
   */
  readonly signature?: WebhookSignature | undefined
  readonly secret: string
  /** The secret rotated out, while it still verifies; else null. */
  readonly previousSecret: string | null
  readonly body: string
  readonly eventType: string
  readonly eventId: string
  readonly deliveryId: string
  readonly traceparent?: string | undefined
}

export interface AttemptResult {
  readonly succeeded: boolean
  readonly statusCode: number | null
  readonly error: string | null
  readonly responseBody: string | null
  readonly durationMs: number
  /** The headers sent (or, when no connection was made, those that were to be sent). */
  readonly requestHeaders: Readonly<Record<string, string>>
  /** Null without a response. */
  readonly responseHeaders: Readonly<Record<string, string>> | null
}

/** A response's headers, names lower-case, up to `RESPONSE_HEADERS_LIMIT` characters. */
const headersOf = (response: Response): Record<string, string> => {
  const kept: Record<string, string> = {}
  let size = 0
  response.headers.forEach((value, name) => {
    size += name.length + value.length
    if (size <= RESPONSE_HEADERS_LIMIT) kept[name] = value
  })
  return kept
}

/** The first 4 KiB of a response body, without reading the rest. */
const readPrefix = async (response: Response): Promise<string> => {
  if (response.body === null) return ""
  const reader = response.body.getReader()
  const chunks: Array<Uint8Array> = []
  let size = 0
  try {
    while (size < RESPONSE_BODY_LIMIT) {
      const { done, value } = await reader.read()
      if (done) break
      chunks.push(value)
      size += value.byteLength
    }
  } finally {
    reader.cancel().catch(() => {})
  }
  return new TextDecoder().decode(Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT))
}

/** The URL with its host replaced by a checked address: the connection goes there and nowhere else. */
const atAddress = (url: URL, address: string): string => {
  const pinned = new URL(url)
  pinned.hostname = isIP(address) === 6 ? `[${address}]` : address
  return pinned.toString()
}

/**
 * Failures that leave no request at a server (the connection was not made, or TLS refused the certificate before
 * anything was sent): after one of these the next checked address is tried. After any other failure (a time-out,
 * a reset once the request may have been sent) the attempt ends, so one attempt never reaches a receiver twice.
 */
const notConnected = (cause: unknown): boolean => {
  const code = typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : ""
  return /^(ECONNREFUSED|ConnectionRefused|EHOSTUNREACH|ENETUNREACH|EADDRNOTAVAIL|ERR_TLS_CERT_ALTNAME_INVALID|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|CERT_HAS_EXPIRED|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)$/.test(
    code
  )
}

/** One attempt, as plain async code (one promise per attempt: it is the worker's hot path). Never rejects. */
const attemptAsync = async (request: AttemptRequest, options: AttemptOptions): Promise<AttemptResult> => {
  const timeoutMs = Duration.toMillis(options.timeout)
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "user-agent": USER_AGENT,
    host: "",
    ...signatureHeaders(request, Math.floor(Date.now() / 1000)),
    "x-service-event": request.eventType,
    "x-service-event-id": request.eventId,
    "x-service-delivery": request.deliveryId
  }
  if (request.traceparent !== undefined) headers.traceparent = request.traceparent
  const failed = (error: string): AttemptResult => ({
    succeeded: false,
    statusCode: null,
    error,
    responseBody: null,
    durationMs: elapsed(),
    requestHeaders: headers,
    responseHeaders: null
  })
  try {
    const url = new URL(request.url)
    headers.host = url.host
    const target = await resolveTarget(request.url, options.allowPrivate, options.resolver ?? systemResolver)
    if ("refused" in target) return failed(`refused: ${target.refused}`)
    // The connection goes to a checked address; the name stays in Host and, for https, in TLS (SNI and the
    // certificate check), so nothing resolves it a second time.
    const name = url.hostname.replace(/^\[(.*)\]$/, "$1")
    const tls =
      url.protocol === "https:"
        ? {
            ...(isIP(name) === 0 ? { serverName: name } : {}),
            ...(options.ca === undefined ? {} : { ca: options.ca })
          }
        : undefined
    const signal = AbortSignal.timeout(timeoutMs)
    const send = (address: string) =>
      fetch(atAddress(url, address), {
        method: "POST",
        headers,
        body: request.body,
        redirect: "manual",
        signal,
        ...(tls === undefined ? {} : { tls })
      })
    let response: Response | undefined
    let lastCause: unknown
    for (const address of target.addresses) {
      try {
        response = await send(address)
        break
      } catch (cause) {
        if (!notConnected(cause)) throw cause
        lastCause = cause
      }
    }
    if (response === undefined) throw lastCause
    const responseBody = await readPrefix(response)
    const succeeded = response.status >= 200 && response.status < 300
    return {
      succeeded,
      statusCode: response.status,
      error: succeeded ? null : `HTTP ${response.status}`,
      responseBody,
      durationMs: elapsed(),
      requestHeaders: headers,
      responseHeaders: headersOf(response)
    }
  } catch (cause) {
    const timedOut = cause instanceof Error && (cause.name === "TimeoutError" || cause.name === "AbortError")
    return failed(
      timedOut
        ? `timed out after ${timeoutMs} ms`
        : `connection failed: ${cause instanceof Error ? cause.message : String(cause)}`
    )
  }
}

export const attempt = (request: AttemptRequest, options: AttemptOptions): Effect.Effect<AttemptResult> =>
  Effect.promise(() => attemptAsync(request, options))
