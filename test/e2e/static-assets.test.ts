// engine-independent: the published documents and assets, the same whatever the engine
/**
 * What the server sends from memory — the `/docs` page, the OpenAPI document, the dashboard's shell and its
 * assets — is sent one way (src/Http/StaticAsset.ts): a strong `ETag` of the bytes, the same in every encoding;
 * `If-None-Match` naming it (weakly or not, among others, or `*`) answers 304; brotli or gzip by `Accept-Encoding`
 * (`q=0` refuses one, `*` takes gzip) with `Vary: Accept-Encoding`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { brotliDecompressSync, gunzipSync } from "node:zlib"
import { negotiate } from "../../src/Http/StaticAsset.ts"
import { startInProcess } from "../support/in-process.ts"
import type { Server } from "../support/server.ts"

let server: Server
/** The routes to check: the docs, the document, the dashboard's shell, and its script (found in the shell). */
let paths: ReadonlyArray<string>

beforeAll(async () => {
  server = await startInProcess()
  const shell = await (await fetch(`${server.url}/dashboard`)).text()
  const script = /src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(shell)?.[1]
  expect(script).toBeDefined()
  paths = ["/docs", "/v1/openapi.json", "/dashboard", script ?? ""]
}, 60_000)

afterAll(async () => {
  await server?.stop()
}, 20_000)

const get = (path: string, headers: Record<string, string>) =>
  fetch(`${server.url}${path}`, { headers, decompress: false })

describe("negotiate", () => {
  test("brotli first, then gzip (also for *), refused by q=0, else identity", () => {
    expect(negotiate(undefined)).toBe("identity")
    expect(negotiate("")).toBe("identity")
    expect(negotiate("identity")).toBe("identity")
    expect(negotiate("gzip, deflate, br")).toBe("br")
    expect(negotiate("gzip, br;q=0")).toBe("gzip")
    expect(negotiate("br; q=0, gzip;q=0")).toBe("identity")
    expect(negotiate("*")).toBe("gzip")
    expect(negotiate("BR;q=0.5")).toBe("br")
  })
})

describe("every body served from memory", () => {
  test("has a strong ETag of its bytes, the same in every encoding, and Vary: Accept-Encoding", async () => {
    for (const path of paths) {
      const plain = await get(path, { "accept-encoding": "identity" })
      expect(plain.status, path).toBe(200)
      expect(plain.headers.get("content-encoding"), path).toBeNull()
      expect(plain.headers.get("vary"), path).toBe("Accept-Encoding")
      const bytes = new Uint8Array(await plain.arrayBuffer())
      const etag = plain.headers.get("etag")
      expect(etag, path).toBe(`"${createHash("sha256").update(bytes).digest("base64url").slice(0, 27)}"`)

      const br = await get(path, { "accept-encoding": "gzip, deflate, br" })
      expect(br.headers.get("content-encoding"), path).toBe("br")
      expect(br.headers.get("etag"), path).toBe(etag)
      expect(br.headers.get("vary"), path).toBe("Accept-Encoding")
      expect(new Uint8Array(brotliDecompressSync(new Uint8Array(await br.arrayBuffer()))), path).toEqual(bytes)

      for (const accept of ["gzip, br;q=0", "*"]) {
        const gzip = await get(path, { "accept-encoding": accept })
        expect(gzip.headers.get("content-encoding"), `${path} ${accept}`).toBe("gzip")
        expect(gzip.headers.get("etag"), path).toBe(etag)
        expect(new Uint8Array(gunzipSync(new Uint8Array(await gzip.arrayBuffer()))), path).toEqual(bytes)
      }
    }
  }, 60_000)

  test("answers 304 with no body when If-None-Match names its tag (weakly, among others, or *), else 200", async () => {
    for (const path of paths) {
      const first = await get(path, { "accept-encoding": "br" })
      await first.arrayBuffer()
      const etag = first.headers.get("etag") ?? ""
      expect(etag, path).toMatch(/^"[A-Za-z0-9_-]+"$/)
      for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
        const again = await get(path, { "accept-encoding": "br", "if-none-match": ifNoneMatch })
        expect(again.status, `${path} ${ifNoneMatch}`).toBe(304)
        expect(again.headers.get("etag"), path).toBe(etag)
        expect(again.headers.get("vary"), path).toBe("Accept-Encoding")
        expect(await again.text(), path).toBe("")
      }
      const changed = await get(path, { "accept-encoding": "identity", "if-none-match": '"other"' })
      expect(changed.status, path).toBe(200)
      expect((await changed.arrayBuffer()).byteLength, path).toBeGreaterThan(0)
    }
  }, 60_000)
})
