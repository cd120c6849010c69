/**
 * The SSRF guard: a webhook may not point at loopback, private, link-local, metadata or other special-purpose
 * addresses (unless `WEBHOOK_ALLOW_PRIVATE_TARGETS=true`). Checked at registration and again for every attempt:
 * the host is resolved once, every address is checked, and the connection goes to a checked address (for https
 * too: the name is kept for TLS only), so a DNS answer that changes in between cannot send it elsewhere.
 */

import { lookup } from "node:dns/promises"
import { isIP } from "node:net"
import { Context, Effect, Schema } from "effect"

export class TargetRefused extends Schema.TaggedError<TargetRefused>()("TargetRefused", {
  message: Schema.String
}) {}

const v4ToInt = (ip: string) => ip.split(".").reduce((acc, part) => acc * 256 + Number(part), 0)

/**
 * Every entry of the IANA IPv4 Special-Purpose Address Registry (globally reachable or not: none is a place a
 * webhook should go), plus multicast.
 */
const V4_BLOCKED: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8], // "this" network (RFC 791)
  ["10.0.0.0", 8], // private (RFC 1918)
  ["100.64.0.0", 10], // shared address space, carrier-grade NAT (RFC 6598)
  ["127.0.0.0", 8], // loopback (RFC 1122)
  ["169.254.0.0", 16], // link-local, cloud metadata 169.254.169.254 (RFC 3927)
  ["172.16.0.0", 12], // private (RFC 1918)
  ["192.0.0.0", 24], // IETF protocol assignments: DS-Lite, PCP/TURN anycast, NAT64 discovery (RFC 6890)
  ["192.0.2.0", 24], // documentation TEST-NET-1 (RFC 5737)
  ["192.31.196.0", 24], // AS112-v4 (RFC 7535)
  ["192.52.193.0", 24], // AMT (RFC 7450)
  ["192.88.99.0", 24], // deprecated 6to4 relay anycast (RFC 7526)
  ["192.168.0.0", 16], // private (RFC 1918)
  ["192.175.48.0", 24], // direct delegation AS112 service (RFC 7534)
  ["198.18.0.0", 15], // benchmarking (RFC 2544)
  ["198.51.100.0", 24], // documentation TEST-NET-2 (RFC 5737)
  ["203.0.113.0", 24], // documentation TEST-NET-3 (RFC 5737)
  ["224.0.0.0", 4], // multicast (RFC 5771)
  ["240.0.0.0", 4] // reserved (RFC 1112), limited broadcast 255.255.255.255 (RFC 919)
]

const inV4 = (ip: string, [base, bits]: readonly [string, number]) => {
  const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0
  return (v4ToInt(ip) & mask) >>> 0 === (v4ToInt(base) & mask) >>> 0
}

/** An IPv6 address as a 128-bit number, or undefined when it is not one. */
const v6ToBigInt = (ip: string): bigint | undefined => {
  let text = ip.toLowerCase().split("%", 1)[0] ?? ""
  const v4Tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1]
  if (v4Tail !== undefined) {
    if (isIP(v4Tail) !== 4) return undefined
    const n = v4ToInt(v4Tail)
    text = `${text.slice(0, -v4Tail.length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`
  }
  // `head::tail`, or no `::` at all (then `tail` is undefined and all eight groups must be written).
  const [head = "", tail, ...more] = text.split("::")
  if (more.length > 0) return undefined
  const left = head === "" ? [] : head.split(":")
  const right = tail === undefined || tail === "" ? [] : tail.split(":")
  const missing = 8 - left.length - right.length
  if (tail === undefined ? missing !== 0 : missing < 1) return undefined
  const groups = [...left, ...Array<string>(tail === undefined ? 0 : missing).fill("0"), ...right]
  if (!groups.every((group) => /^[0-9a-f]{1,4}$/.test(group))) return undefined
  return groups.reduce((acc, group) => (acc << 16n) | BigInt(parseInt(group, 16)), 0n)
}

const v6Range = (base: string, bits: number) => {
  const value = v6ToBigInt(base)
  // Only ever called with the literals below: a typo there is a bug to find at start-up.
  if (value === undefined) throw new Error(`not an IPv6 address: ${base}`)
  const mask = bits === 0 ? 0n : ((1n << BigInt(bits)) - 1n) << BigInt(128 - bits)
  return { value: value & mask, mask }
}

const inV6 = (n: bigint, range: { readonly value: bigint; readonly mask: bigint }) => (n & range.mask) === range.value

/** Global unicast (RFC 4291): every IPv6 address outside it is loopback, local, multicast, reserved or embedded. */
const GLOBAL_UNICAST = v6Range("2000::", 3)

/** IPv6 forms that carry an IPv4 address in their last 32 bits, judged by that address. */
const V6_EMBEDDING_V4 = [
  v6Range("::ffff:0:0", 96), // IPv4-mapped (RFC 4291)
  v6Range("64:ff9b::", 96) // NAT64 well-known prefix (RFC 6052)
]

/**
 * The IANA IPv6 Special-Purpose Address Registry's entries inside global unicast; the ones outside it (`::/128`,
 * `::1/128`, IPv4-compatible `::/96`, SIIT `::ffff:0:0:0/96`, `64:ff9b:1::/48`, discard `100::/64`, segment
 * routing `5f00::/16`, unique local `fc00::/7`, link-local `fe80::/10`, site-local `fec0::/10`, multicast
 * `ff00::/8`) are refused as not global unicast.
 */
const V6_BLOCKED = [
  v6Range("2001::", 23), // IETF protocol assignments: Teredo 2001::/32 (embeds an obfuscated IPv4), PCP, AMT, AS112, ORCHID (RFC 2928)
  v6Range("2001:db8::", 32), // documentation (RFC 3849)
  v6Range("2002::", 16), // 6to4 (RFC 3056, deprecated by RFC 7526), embeds an IPv4 address
  v6Range("2620:4f:8000::", 48), // direct delegation AS112 service (RFC 7534)
  v6Range("3fff::", 20) // documentation (RFC 9637)
]

const v4FromBits = (n: bigint) => {
  const v4 = Number(n & 0xffffffffn)
  return [v4 >>> 24, (v4 >>> 16) & 255, (v4 >>> 8) & 255, v4 & 255].join(".")
}

/** Whether an IP literal is one a webhook may not reach. */
export const isBlockedAddress = (ip: string): boolean => {
  const family = isIP(ip)
  if (family === 4) return V4_BLOCKED.some((range) => inV4(ip, range))
  if (family !== 6) return true
  const n = v6ToBigInt(ip)
  if (n === undefined) return true
  if (V6_EMBEDDING_V4.some((range) => inV6(n, range))) return isBlockedAddress(v4FromBits(n))
  if (!inV6(n, GLOBAL_UNICAST)) return true
  return V6_BLOCKED.some((range) => inV6(n, range))
}

const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1")

/** Answers a host name's addresses, in the order to try them (rejects when there are none). */
export interface Resolver {
  readonly lookup: (host: string) => Promise<ReadonlyArray<string>>
}

/** The system's resolver (getaddrinfo, as the operating system orders its answers). */
export const systemResolver: Resolver = {
  lookup: async (host) => (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address)
}

/**
 * The resolver webhook targets are looked up with: the system's unless a layer provides another (the tests do, to
 * answer what DNS would in an attack).
 */
export class TargetResolver extends Context.Reference<TargetResolver>()("TargetResolver", {
  defaultValue: (): Resolver => systemResolver
}) {}

/**
 * Resolves the URL's host once and checks every address. Answers the addresses to connect to, in the resolver's
 * order (the attempt connects to these, never to the name), or the reason the target is refused. Plain async: the
 * delivery attempt calls it for every attempt.
 */
export const resolveTarget = async (
  rawUrl: string,
  allowPrivate: boolean,
  resolver: Resolver = systemResolver
): Promise<{ readonly addresses: ReadonlyArray<string> } | { readonly refused: string }> => {
  const host = hostOf(new URL(rawUrl))
  let addresses: ReadonlyArray<string>
  if (isIP(host) !== 0) {
    addresses = [host]
  } else {
    try {
      addresses = await resolver.lookup(host)
    } catch {
      return { refused: `${host} could not be resolved` }
    }
  }
  const first = addresses[0]
  if (first === undefined) return { refused: `${host} could not be resolved` }
  if (!allowPrivate) {
    const blocked = addresses.find(isBlockedAddress)
    if (blocked !== undefined) {
      return { refused: `${host} resolves to ${blocked}, a loopback, private, link-local or reserved address` }
    }
  }
  return { addresses }
}

/** `resolveTarget` as an Effect: the first address, or `TargetRefused` naming the reason (registration uses it). */
export const checkTarget = (rawUrl: string, allowPrivate: boolean): Effect.Effect<string, TargetRefused> =>
  Effect.flatMap(
    Effect.flatMap(TargetResolver, (resolver) => Effect.promise(() => resolveTarget(rawUrl, allowPrivate, resolver))),
    (target) =>
      "addresses" in target ? Effect.succeed(target.addresses[0] ?? "") : new TargetRefused({ message: target.refused })
  )
