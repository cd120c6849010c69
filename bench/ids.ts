/**
 * Id making, the encoder now against the `BigInt` one it replaced, side by side in one run (A B A B …):
 * `bun bench/ids.ts [rounds]`. Prints µs per id for each round and the medians' ratio.
 */
import { encodeBase32, makeId } from "../src/Domain/Ids.ts"
import { median } from "./stats.ts"

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
const bigIntEncoder = (bytes: Uint8Array): string => {
  let value = 0n
  for (const b of bytes) value = (value << 8n) | BigInt(b)
  let out = ""
  for (let i = 0; i < 26; i++) {
    out = ALPHABET.charAt(Number(value & 31n)) + out
    value >>= 5n
  }
  return out
}

const N = 200_000
const inputs = Array.from({ length: 1024 }, () => crypto.getRandomValues(new Uint8Array(16)))
const timed = (encode: (bytes: Uint8Array) => string): number => {
  let length = 0
  const start = performance.now()
  for (let i = 0; i < N; i++) length += encode(inputs[i & 1023] ?? new Uint8Array(16)).length
  if (length !== N * 26) throw new Error("wrong length")
  return ((performance.now() - start) * 1000) / N
}

const rounds = Number(process.argv[2] ?? 5)
const now: Array<number> = []
const before: Array<number> = []
for (let round = 0; round < rounds; round++) {
  before.push(timed(bigIntEncoder))
  now.push(timed(encodeBase32))
  console.log(`round ${round + 1}: BigInt ${before.at(-1)?.toFixed(3)} µs, now ${now.at(-1)?.toFixed(3)} µs per encode`)
}
const made = performance.now()
for (let i = 0; i < N; i++) makeId("delivery")
console.log(`makeId (random bytes + clock + encode): ${(((performance.now() - made) * 1000) / N).toFixed(3)} µs`)
console.log(
  `median: BigInt ${median(before).toFixed(3)} µs, now ${median(now).toFixed(3)} µs, ${(median(before) / median(now)).toFixed(1)}× faster`
)
