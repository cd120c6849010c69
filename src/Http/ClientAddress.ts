/**
 * The client's address behind trusted proxies (`TRUSTED_PROXIES`: the load balancer in front of the replicas). When
 * the socket's peer is a trusted proxy, the client is the right-most `X-Forwarded-For` entry that is not one: each
 * proxy appends the address it received the request from, so that entry was written by a proxy we trust, and the
 * entries left of it are whatever the client sent. Otherwise the peer itself, so that a client reaching the server
 * directly cannot choose its own rate-limit bucket by sending the header.
 */
import { BlockList, isIP } from "node:net"
import type { TrustedProxy } from "../Config.js"

/** `::ffff:10.0.0.1` (an IPv4 peer of a dual-stack socket) as `10.0.0.1`. */
const plain = (address: string) =>
  address.startsWith("::ffff:") && isIP(address.slice(7)) === 4 ? address.slice(7) : address

export interface TrustedProxies {
  /** The client's address for a request from `peer` carrying `forwardedFor` (`X-Forwarded-For`), if any. */
  readonly clientOf: (peer: string, forwardedFor: string | undefined) => string
}

export const trustedProxies = (entries: ReadonlyArray<TrustedProxy>): TrustedProxies => {
  const list = new BlockList()
  for (const entry of entries) {
    const type = isIP(entry.address) === 6 ? "ipv6" : "ipv4"
    if (entry.prefix === undefined) list.addAddress(entry.address, type)
    else list.addSubnet(entry.address, entry.prefix, type)
  }
  const trusted = (address: string) => {
    const family = isIP(address)
    return family !== 0 && list.check(address, family === 6 ? "ipv6" : "ipv4")
  }
  return {
    clientOf: (peer, forwardedFor) => {
      if (forwardedFor === undefined || !trusted(plain(peer))) return peer
      const hops = forwardedFor.split(",")
      for (let i = hops.length - 1; i >= 0; i--) {
        const hop = plain((hops[i] ?? "").trim())
        if (hop !== "" && !trusted(hop)) return hop
      }
      return peer
    }
  }
}
