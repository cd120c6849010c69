// engine-independent: no database
/**
 * The SSRF guard and the signature, as pure functions: IP literals and "localhost" only, no network.
 */

import { describe, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
import { verify } from "@octokit/webhooks-methods"
import { Effect, Either } from "effect"
import { signature } from "../../src/Webhooks/Delivery/Attempt.ts"
import { checkTarget, isBlockedAddress } from "../../src/Webhooks/Delivery/Targets.ts"

const check = (url: string, allowPrivate = false) => Effect.runPromise(Effect.either(checkTarget(url, allowPrivate)))

describe("isBlockedAddress", () => {
  test.each([
    ["0.0.0.0", "this network"],
    ["0.1.2.3", "this network"],
    ["10.0.0.1", "private 10/8"],
    ["10.255.255.255", "private 10/8"],
    ["100.64.0.1", "carrier-grade NAT"],
    ["100.127.255.254", "carrier-grade NAT"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["169.254.169.254", "cloud metadata"],
    ["169.254.0.1", "link-local"],
    ["172.16.0.1", "private 172.16/12"],
    ["172.31.255.255", "private 172.16/12"],
    ["192.0.0.170", "IETF protocol assignments"],
    ["192.0.2.1", "documentation"],
    ["192.168.1.1", "private 192.168/16"],
    ["198.18.0.1", "benchmarking"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.9", "documentation"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["::", "unspecified"],
    ["::1", "IPv6 loopback"],
    ["0:0:0:0:0:0:0:1", "IPv6 loopback, long form"],
    ["::ffff:127.0.0.1", "IPv4-mapped loopback"],
    ["::ffff:7f00:1", "IPv4-mapped loopback, hex form (as WHATWG URL normalises it)"],
    ["::ffff:a9fe:a9fe", "IPv4-mapped metadata address"],
    ["::ffff:10.1.2.3", "IPv4-mapped private"],
    ["64:ff9b::a9fe:a9fe", "NAT64 of the metadata address"],
    ["64:ff9b::127.0.0.1", "NAT64 of loopback"],
    ["fc00::1", "unique local"],
    ["fd00:ec2::254", "AWS metadata over IPv6"],
    ["fe80::1", "link-local"],
    ["FE80::ABCD", "link-local, upper case"],
    ["febf::1", "link-local, top of fe80::/10"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "documentation"],
    // Forms that embed an IPv4 address, and the rest of the IANA IPv6 special-purpose registry.
    ["::127.0.0.1", "IPv4-compatible loopback (deprecated ::/96)"],
    ["::7f00:1", "IPv4-compatible loopback, hex form"],
    ["::8.8.8.8", "IPv4-compatible, even of a public address (deprecated, not routable)"],
    ["::ffff:0:7f00:1", "SIIT IPv4-translated loopback (::ffff:0:0:0/96)"],
    ["::ffff:0:808:808", "SIIT IPv4-translated, even of a public address"],
    ["2002:7f00:1::", "6to4 of loopback"],
    ["2002:a9fe:a9fe::1", "6to4 of the metadata address"],
    ["2002:808:808::1", "6to4 of a public address (6to4 is deprecated)"],
    ["2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo (2001::/32), whose client address is 127.0.0.1 obfuscated"],
    ["2001::1", "Teredo"],
    ["2001:2::1", "benchmarking (2001:2::/48)"],
    ["2001:1::1", "PCP anycast"],
    ["2001:20::1", "ORCHIDv2"],
    ["64:ff9b:1::a9fe:a9fe", "local-use IPv4/IPv6 translation (64:ff9b:1::/48)"],
    ["100::1", "discard-only (100::/64)"],
    ["5f00::1", "segment routing SIDs (5f00::/16)"],
    ["fec0::1", "deprecated site-local"],
    ["3fff::1", "documentation (3fff::/20)"],
    ["2620:4f:8000::1", "AS112 direct delegation"],
    ["4000::1", "outside global unicast 2000::/3"],
    ["::2", "reserved ::/8"],
    ["192.31.196.1", "AS112-v4"],
    ["192.52.193.1", "AMT"],
    ["192.88.99.1", "6to4 relay anycast"],
    ["192.175.48.1", "AS112 direct delegation"],
    ["192.0.0.9", "PCP anycast"],
    ["::ffff:192.0.0.170", "IPv4-mapped NAT64 discovery"],
    ["64:ff9b::10.0.0.1", "NAT64 of a private address"],
    ["1:2:3:4:5:6:7:8:9", "malformed: nine groups"],
    ["1::2::3", "malformed: two '::'"],
    ["not-an-ip", "not an IP literal at all"],
    ["localhost", "a name, not an address"],
    ["", "empty"]
  ])("%s is blocked (%s)", (ip) => {
    expect(isBlockedAddress(ip)).toBe(true)
  })

  test.each([
    ["8.8.8.8"],
    ["1.1.1.1"],
    ["93.184.216.34"],
    ["9.255.255.255"], // just below 10/8
    ["11.0.0.0"], // just above 10/8
    ["100.63.255.255"], // just below 100.64/10
    ["100.128.0.0"], // just above 100.64/10
    ["126.255.255.255"], // just below 127/8
    ["128.0.0.1"], // just above 127/8
    ["169.253.255.255"],
    ["169.255.0.1"],
    ["172.15.255.255"], // just below 172.16/12
    ["172.32.0.1"], // just above 172.16/12
    ["192.167.255.255"],
    ["192.169.0.1"],
    ["223.255.255.255"], // just below multicast
    ["2606:4700:4700::1111"],
    ["2a00:1450:4001:80b::200e"],
    ["::ffff:8.8.8.8"], // IPv4-mapped public
    ["64:ff9b::808:808"], // NAT64 of 8.8.8.8
    ["2001:4860:4860::8888"], // global unicast just past 2001::/23
    ["2003::1"], // just past 6to4 2002::/16
    ["3ffe::1"] // just below 3fff::/20
  ])("%s is allowed", (ip) => {
    expect(isBlockedAddress(ip)).toBe(false)
  })
})

describe("checkTarget", () => {
  test.each([
    "http://127.0.0.1:9/x",
    "http://localhost/x",
    "http://LOCALHOST:8080/x",
    "http://[::1]/x",
    "http://10.0.0.1/x",
    "http://192.168.1.1/x",
    "http://169.254.169.254/latest/meta-data",
    "http://172.16.0.1/x",
    "http://[fd00:ec2::254]/x",
    "https://[fe80::1]/x",
    "http://0.0.0.0/x",
    // Alternative spellings of loopback: WHATWG URL normalises them to 127.0.0.1 before the check.
    "http://2130706433/x",
    "http://0x7f.0.0.1/x",
    "http://127.1/x",
    "http://[::ffff:127.0.0.1]/x",
    "http://[0:0:0:0:0:0:0:1]/x",
    // IPv4-compatible, SIIT and 6to4 spellings of loopback (WHATWG URL writes them in hex).
    "http://[::127.0.0.1]/",
    "http://[::7f00:1]/",
    "http://[::ffff:0:7f00:1]/",
    "http://[2002:7f00:1::]/",
    "http://[64:ff9b::127.0.0.1]/",
    "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/"
  ])("refuses %s without private targets allowed", async (url) => {
    const result = await check(url)
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isLeft(result)) {
      expect(result.left._tag).toBe("TargetRefused")
      expect(result.left.message).toMatch(/loopback, private, link-local or reserved address/)
    }
  })

  test("names the host and the blocked address it resolved to", async () => {
    const result = await check("http://169.254.169.254/latest/meta-data")
    expect(result).toEqual(
      Either.left(expect.objectContaining({ message: expect.stringContaining("169.254.169.254") }))
    )
  })

  test("with private targets allowed, loopback literals pass and answer the address to connect to", async () => {
    expect(await check("http://127.0.0.1:9/x", true)).toEqual(Either.right("127.0.0.1"))
    expect(await check("http://[::1]:9/x", true)).toEqual(Either.right("::1"))
    expect(await check("http://10.0.0.1/x", true)).toEqual(Either.right("10.0.0.1"))
    const local = await check("http://localhost:9/x", true)
    expect(Either.isRight(local)).toBe(true)
    if (Either.isRight(local)) expect(["127.0.0.1", "::1"]).toContain(local.right)
  })

  test("public IP literals pass without any lookup and answer themselves", async () => {
    expect(await check("https://93.184.216.34/hook")).toEqual(Either.right("93.184.216.34"))
    expect(await check("http://[2606:4700:4700::1111]:8080/hook")).toEqual(Either.right("2606:4700:4700::1111"))
  })
})

describe("signature", () => {
  test("is sha256=<64 lowercase hex>, the HMAC-SHA256 of the body keyed with the secret's UTF-8 bytes", () => {
    const secret = "whsec_0123456789ABCDEFabcdef012345"
    const body = JSON.stringify({ id: "evt_1", type: "project.created", data: { name: "Zoë ✓" } })
    const value = signature(secret, body)
    expect(value).toMatch(/^sha256=[0-9a-f]{64}$/)
    expect(value).toBe(
      `sha256=${createHmac("sha256", Buffer.from(secret, "utf8")).update(Buffer.from(body, "utf8")).digest("hex")}`
    )
  })

  test("a known vector (RFC 4231 test case 2)", () => {
    expect(signature("Jefe", "what do ya want for nothing?")).toBe(
      "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    )
  })

  test("verifies with @octokit/webhooks-methods, and not with another secret or a changed body", async () => {
    const secret = "a-secret-with-ünïcode-and-more"
    const body = '{"hello":"wörld"}'
    const value = signature(secret, body)
    expect(await verify(secret, body, value)).toBe(true)
    expect(await verify(`${secret}x`, body, value)).toBe(false)
    expect(await verify(secret, `${body} `, value)).toBe(false)
  })

  test("depends on every byte: different secrets and bodies give different signatures", () => {
    const a = signature("secret-number-one!", "{}")
    expect(signature("secret-number-two!", "{}")).not.toBe(a)
    expect(signature("secret-number-one!", "{ }")).not.toBe(a)
    expect(signature("secret-number-one!", "{}")).toBe(a)
  })
})
