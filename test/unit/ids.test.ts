// engine-independent: no database
/**
 * Ids (src/Domain/Ids.ts): the base32 text of a UUIDv7 is the 128-bit number written five bits a character, as
 * TypeID does. Checked against a `BigInt` reading of the same bytes, so the encoder's bit arithmetic cannot drift
 * from the format ids already stored use.
 */
import { describe, expect, test } from "bun:test"
import { encodeBase32, makeId } from "../../src/Domain/Ids.ts"

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"

/** The reference: the bytes as one big-endian number, 26 digits in base 32, most significant first. */
const reference = (bytes: Uint8Array): string => {
  let value = 0n
  for (const byte of bytes) value = (value << 8n) | BigInt(byte)
  return value
    .toString(32)
    .padStart(26, "0")
    .replace(/[0-9a-v]/g, (digit) => ALPHABET.charAt(parseInt(digit, 32)))
}

describe("ids", () => {
  test("the encoder equals the 128-bit number in Crockford base32, for edge and random values", () => {
    const cases = [
      new Uint8Array(16),
      new Uint8Array(16).fill(0xff),
      Uint8Array.from({ length: 16 }, (_, i) => (i === 15 ? 1 : 0)),
      Uint8Array.from({ length: 16 }, (_, i) => (i === 0 ? 0x80 : 0)),
      ...Array.from({ length: 2000 }, () => crypto.getRandomValues(new Uint8Array(16)))
    ]
    for (const bytes of cases) expect(encodeBase32(bytes)).toBe(reference(bytes))
    expect(encodeBase32(new Uint8Array(16).fill(0xff))).toBe("7zzzzzzzzzzzzzzzzzzzzzzzzz")
  })

  test("ids made in a row have their prefix, 26 characters, and sort in the order they were made", () => {
    const ids = Array.from({ length: 5000 }, () => makeId("delivery"))
    for (const id of ids) expect(id).toMatch(/^dlv_[0-7][0-9a-hjkmnp-tv-z]{25}$/)
    expect([...ids].sort()).toEqual(ids)
    expect(new Set(ids).size).toBe(ids.length)
  })
})
