/**
 * A webhook receiver to try the service on one machine (the README's tour): listens on a loopback port, prints each
 * delivery it gets and whether its signature verified, and answers 2xx to a verified one (401 otherwise, so the
 * service records a failed attempt and retries, as it would against a real receiver that refuses it).
 *
 * Usage: bun scripts/webhook-receiver.ts [--port 4101] [--secret S]
 *
 * - `X-Service-Signature: sha256=<hex>` is the lowercase hex HMAC-SHA256 of the raw body, keyed with the secret's
 *   UTF-8 bytes; compared in constant time.
 * - `webhook-signature` (Standard Webhooks), when the service sends it, signs `{webhook-id}.{webhook-timestamp}.{body}`
 *   and may hold several space-separated `v1,<base64>` entries (two while a rotated-out secret still verifies); the
 *   key is the base64-decoded part after `whsec_` when it decodes to 16 bytes or more, else the secret's UTF-8 bytes.
 *
 * Without `--secret` nothing can be verified: deliveries are printed and answered 200, with a note.
 * `GET` on any path answers 200, so a script can wait until the receiver is up.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { parseArgs } from "node:util"

const { values } = parseArgs({
  options: { port: { type: "string", default: "4101" }, secret: { type: "string" } },
  strict: true
})
const port = Number(values.port)
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`error: --port must be a port number, not ${values.port}`)
  process.exit(2)
}
const secret = values.secret

const sameText = (a: string, b: string): boolean => {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

/** The spec's header: `sha256=` and the hex HMAC-SHA256 of the raw body. */
const serviceSignatureOk = (key: string, body: string, header: string | null): boolean =>
  header !== null && sameText(header, `sha256=${createHmac("sha256", key).update(body).digest("hex")}`)

const standardKey = (key: string): Buffer => {
  if (key.startsWith("whsec_")) {
    const decoded = Buffer.from(key.slice("whsec_".length), "base64")
    if (decoded.length >= 16) return decoded
  }
  return Buffer.from(key, "utf8")
}

/** Standard Webhooks: any one `v1,` entry that matches verifies the delivery. */
const standardSignatureOk = (key: string, body: string, headers: Headers): boolean => {
  const id = headers.get("webhook-id") ?? ""
  const timestamp = headers.get("webhook-timestamp") ?? ""
  const expected = createHmac("sha256", standardKey(key)).update(`${id}.${timestamp}.${body}`).digest("base64")
  return (headers.get("webhook-signature") ?? "")
    .split(" ")
    .some((entry) => entry.startsWith("v1,") && sameText(entry.slice(3), expected))
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port,
  async fetch(request) {
    if (request.method !== "POST") return new Response("webhook receiver: POST deliveries here")
    const body = await request.text()
    const event = request.headers.get("x-service-event") ?? "(no X-Service-Event)"
    const delivery = request.headers.get("x-service-delivery") ?? "(no X-Service-Delivery)"
    let verdict: string
    let verified = true
    if (secret === undefined) {
      verdict = "signature not checked (start the receiver with --secret)"
    } else {
      verified = serviceSignatureOk(secret, body, request.headers.get("x-service-signature"))
      verdict = verified ? "signature verified" : "signature NOT verified"
      if (request.headers.has("webhook-signature")) {
        const standard = standardSignatureOk(secret, body, request.headers)
        verified &&= standard
        verdict += standard ? ", Standard Webhooks signature verified" : ", Standard Webhooks signature NOT verified"
      }
      if (!verified) verdict += " (answered 401)"
    }
    console.log(`${new Date().toISOString()} ${event} ${delivery}: ${verdict}\n  ${body}`)
    return new Response(verified ? "ok\n" : "signature not verified\n", { status: verified ? 200 : 401 })
  }
})

console.log(`webhook receiver listening on http://127.0.0.1:${server.port}/hooks`)
