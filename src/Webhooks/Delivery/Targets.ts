/**
 * The SSRF guard: a webhook may not point at loopback, private, link-local, metadata or other special-purpose
 * addresses (unless `WEBHOOK_ALLOW_PRIVATE_TARGETS=true`). Checked at registration and again at connect time:
 * the host is resolved, every address is checked, and the connection goes to a checked address.
 */
import { Effect, Schema } from "effect"
import { lookup } from "node:dns/promises"
import { isIP } from "node:net"

export class TargetRefused extends Schema.TaggedError<TargetRefused>()("TargetRefused", {
  message: Schema.String
}) {}

const v4ToInt = (ip: string) => ip.split(".").reduce((acc, part) => acc * 256 + Number(part), 0)

const V4_BLOCKED: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8], // "this" network
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local, cloud metadata (169.254.169.254)
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24], // 6to4 relay
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation
  ["203.0.113.0", 24], // documentation
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4] // reserved, broadcast
]

const inV4 = (ip: string, [base, bits]: readonly [string, number]) => {
  const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0
  return ((v4ToInt(ip) & mask) >>> 0) === ((v4ToInt(base) & mask) >>> 0)
}

/** Expands an IPv6 address to its eight 16-bit groups. */
const v6Groups = (ip: string): Array<number> => {
  let text = ip.toLowerCase().split("%")[0]!
  const v4Tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (v4Tail !== null) {
    const n = v4ToInt(v4Tail[1]!)
    text = text.slice(0, -v4Tail[1]!.length) + `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`
  }
  const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined]
  const left = head === "" || head === undefined ? [] : head.split(":")
  const right = tail === undefined || tail === "" ? [] : tail.split(":")
  const fill = tail === undefined ? [] : Array(8 - left.length - right.length).fill("0")
  return [...left, ...fill, ...right].map((group) => parseInt(group, 16))
}

/** Whether an IP literal is one a webhook may not reach. */
export const isBlockedAddress = (ip: string): boolean => {
  const family = isIP(ip)
  if (family === 4) return V4_BLOCKED.some((range) => inV4(ip, range))
  if (family !== 6) return true
  const g = v6Groups(ip)
  const [a = 0, b = 0, c = 0, d = 0, e = 0, f = 0] = g
  if (g.every((group) => group === 0)) return true // ::
  if (g.slice(0, 7).every((group) => group === 0) && g[7] === 1) return true // ::1
  // IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d): judge the embedded IPv4 address.
  if ((a === 0 && b === 0 && c === 0 && d === 0 && e === 0 && f === 0xffff) || (a === 0x64 && b === 0xff9b)) {
    const n = ((g[6] ?? 0) << 16 | (g[7] ?? 0)) >>> 0
    return isBlockedAddress([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join("."))
  }
  if ((a & 0xfe00) === 0xfc00) return true // unique local fc00::/7 (incl. fd00:ec2::254 metadata)
  if ((a & 0xffc0) === 0xfe80) return true // link-local fe80::/10
  if ((a & 0xff00) === 0xff00) return true // multicast
  if (a === 0x2001 && b === 0x0db8) return true // documentation
  return false
}

const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1")

/**
 * Resolves the URL's host and checks every address. Answers the address to connect to (the first one),
 * or fails with `TargetRefused` naming the reason.
 */
export const checkTarget = (rawUrl: string, allowPrivate: boolean): Effect.Effect<string, TargetRefused> =>
  Effect.gen(function*() {
    const url = new URL(rawUrl)
    const host = hostOf(url)
    const addresses = isIP(host) !== 0
      ? [host]
      : yield* Effect.tryPromise({
        try: () => lookup(host, { all: true, verbatim: true }).then((found) => found.map((entry) => entry.address)),
        catch: () => new TargetRefused({ message: `${host} could not be resolved` })
      })
    if (addresses.length === 0) return yield* new TargetRefused({ message: `${host} could not be resolved` })
    if (!allowPrivate) {
      const blocked = addresses.find(isBlockedAddress)
      if (blocked !== undefined) {
        return yield* new TargetRefused({
          message: `${host} resolves to ${blocked}, a loopback, private, link-local or reserved address`
        })
      }
    }
    return addresses[0]!
  })
