/**
 * One delivery attempt: POST the stored event bytes, signed, to the checked address; 2xx succeeds, anything
 * else (3xx — redirects are not followed —, 4xx, 5xx, connection errors, the time-out) fails.
 */

import { createHmac } from "node:crypto"
import { isIP } from "node:net"
import { Duration, Effect } from "effect"
import { resolveTarget } from "./Targets.js"

export const USER_AGENT = "ProjectCollaborationService-Webhooks/1.0"
const RESPONSE_BODY_LIMIT = 4096

/** `sha256=<lowercase hex HMAC-SHA256 of the raw body, keyed with the secret's UTF-8 bytes>` */
export const signature = (secret: string, body: string): string =>
  `sha256=${createHmac("sha256", Buffer.from(secret, "utf8")).update(body, "utf8").digest("hex")}`

export interface AttemptRequest {
  readonly url: string
  readonly secret: string
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

/**
 * For `http:` the connection goes to the address that was checked (Host keeps the name), so a DNS answer that
 * changes between check and connect cannot redirect it. For `https:` the name must stay in the URL for TLS.
 */
const pinnedUrl = (raw: string, address: string): string => {
  const url = new URL(raw)
  if (url.protocol !== "http:" || isIP(url.hostname.replace(/^\[(.*)\]$/, "$1")) !== 0) return raw
  url.hostname = isIP(address) === 6 ? `[${address}]` : address
  return url.toString()
}

/** One attempt, as plain async code (one promise per attempt: it is the worker's hot path). Never rejects. */
const attemptAsync = async (
  request: AttemptRequest,
  timeoutMs: number,
  allowPrivate: boolean
): Promise<AttemptResult> => {
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  const failed = (error: string): AttemptResult => ({
    succeeded: false,
    statusCode: null,
    error,
    responseBody: null,
    durationMs: elapsed()
  })
  try {
    const target = await resolveTarget(request.url, allowPrivate)
    if ("refused" in target) return failed(`refused: ${target.refused}`)
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "user-agent": USER_AGENT,
      host: new URL(request.url).host,
      "x-service-signature": signature(request.secret, request.body),
      "x-service-event": request.eventType,
      "x-service-event-id": request.eventId,
      "x-service-delivery": request.deliveryId
    }
    if (request.traceparent !== undefined) headers.traceparent = request.traceparent
    const response = await fetch(pinnedUrl(request.url, target.address), {
      method: "POST",
      headers,
      body: request.body,
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs)
    })
    const responseBody = await readPrefix(response)
    const succeeded = response.status >= 200 && response.status < 300
    return {
      succeeded,
      statusCode: response.status,
      error: succeeded ? null : `HTTP ${response.status}`,
      responseBody,
      durationMs: elapsed()
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

export const attempt = (
  request: AttemptRequest,
  options: { readonly timeout: Duration.Duration; readonly allowPrivate: boolean }
): Effect.Effect<AttemptResult> =>
  Effect.promise(() => attemptAsync(request, Duration.toMillis(options.timeout), options.allowPrivate))
