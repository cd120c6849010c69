// engine-independent: no database
/**
 * The rules of `Idempotency-Key` that need no server: what a key may be, how a request is compared (parsed JSON,
 * whatever the member order and whitespace), and which answers are recorded.
 */
import { describe, expect, test } from "bun:test"
import { Either, Schema } from "effect"
import { IdempotencyKeyHeader } from "../../src/Contract/Idempotency.ts"
import { canonicalJson, isRecorded, requestHash, requestHashOfJson } from "../../src/Idempotency/Idempotency.ts"

describe("a key", () => {
  test("is 1 to 255 characters of %x21-7E, as the endpoints declare the header", () => {
    const decode = Schema.decodeUnknownEither(IdempotencyKeyHeader)
    for (const good of ["a", "~", "!", "k".repeat(255), "0d3c7a52-7f5e-4a5e-9d86-2b1b2f7a8c11", "a:b/c?d=e&f"]) {
      expect({ good, valid: Either.isRight(decode({ "idempotency-key": good })) }).toEqual({ good, valid: true })
    }
    for (const bad of ["", "k".repeat(256), "a b", "a\tb", "\u007f", "caf\u00e9", "\u0000", "a\nb"]) {
      expect({ bad, valid: Either.isRight(decode({ "idempotency-key": bad })) }).toEqual({ bad, valid: false })
    }
    expect(Either.isRight(decode({}))).toBe(true)
  })
})

describe("a request's hash", () => {
  test("compares bodies as parsed JSON: member order and whitespace do not matter, values do", () => {
    const base = requestHash("POST", "/v1/projects", '{"name":"a","tags":{"x":1,"y":[1,2]}}')
    expect(requestHash("POST", "/v1/projects", '{ "tags": { "y": [1, 2], "x": 1.0 },\n "name": "a" }')).toBe(base)
    expect(requestHash("POST", "/v1/projects", '{"name":"a","tags":{"x":1,"y":[2,1]}}')).not.toBe(base)
    expect(requestHash("POST", "/v1/projects", '{"name":"b","tags":{"x":1,"y":[1,2]}}')).not.toBe(base)
    expect(requestHash("POST", "/v1/teams", '{"name":"a","tags":{"x":1,"y":[1,2]}}')).not.toBe(base)
    expect(requestHash("PUT", "/v1/projects", '{"name":"a","tags":{"x":1,"y":[1,2]}}')).not.toBe(base)
  })

  test("takes a body that is not JSON as sent, and no body as empty", () => {
    expect(requestHash("POST", "/v1/x", "not json")).toBe(requestHash("POST", "/v1/x", "not json"))
    expect(requestHash("POST", "/v1/x", "not json")).not.toBe(requestHash("POST", "/v1/x", "not  json"))
    expect(requestHash("POST", "/v1/x", "")).not.toBe(requestHash("POST", "/v1/x", "{}"))
  })

  test("is the same for a body the server parsed already as for its text, so keys recorded either way replay", () => {
    const text = '{ "tags": { "y": [1, 2], "x": 1.0 },\n "name": "a" }'
    expect(requestHashOfJson("POST", "/v1/projects", JSON.parse(text))).toBe(requestHash("POST", "/v1/projects", text))
    expect(requestHashOfJson("POST", "/v1/projects", { name: "b" })).not.toBe(requestHash("POST", "/v1/projects", text))
  })

  test("canonical JSON sorts members at every depth and keeps array order", () => {
    expect(canonicalJson({ b: [{ d: 1, c: "é" }], a: null })).toBe('{"a":null,"b":[{"c":"é","d":1}]}')
  })
})

describe("recorded answers", () => {
  test("are 2xx and 4xx except 401, 403 and 429", () => {
    expect([200, 201, 202, 204, 400, 404, 409, 422].every(isRecorded)).toBe(true)
    expect([401, 403, 429, 500, 502, 503, 301, 100].some(isRecorded)).toBe(false)
  })
})
