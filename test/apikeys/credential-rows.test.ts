/**
 * The key lookup's rows (src/ApiKeys/Repo.ts, `decodeCredentialRows`), decoded when authentication looks a key up:
 * they come out as the `KeyCredential` schema with its scopes as JSON text decodes them, and a row the schema
 * refuses is a defect (never a credential).
 */
import { describe, expect, test } from "bun:test"
import { Cause, Effect, Exit, Schema } from "effect"
import { decodeCredentialRows } from "../../src/ApiKeys/Repo.ts"
import { KeyCredential } from "../../src/Domain/ApiKey.ts"
import { Scope } from "../../src/Domain/Scopes.ts"

const good = {
  id: "key_01m84sn7pyepjvcf4s44dkjc6x",
  user_id: "usr_01m84sn6yketqtxa83nm1xwvt4",
  user_name: "Ann",
  org_id: "org_01m84sn6yketqbxvz7n0jm2cq5",
  key_hash: "e419a80b5819c5b9b6d1430302c7198dad8e9a2bfc3829147b30ae3b48c0ce17",
  scopes: '["read","projects:write"]',
  status: "active",
  expires_at: null,
  last_used_at: null
}
const bySchema = Schema.decodeUnknownSync(
  Schema.Array(Schema.Struct({ ...KeyCredential.fields, scopes: Schema.parseJson(Schema.Array(Scope)) }))
)

describe("the key lookup's rows", () => {
  test("decode as the schema does: no rows, one, several, a used and an expired key", () => {
    const rows = [
      good,
      {
        ...good,
        id: "key_01m84sn7pyepjvcf4s44dkjc6y",
        status: "expired",
        expires_at: "2026-11-23T18:00:00.000Z",
        last_used_at: "2026-11-23T18:11:01.821Z"
      },
      { ...good, scopes: "[]", status: "revoked" }
    ]
    for (const input of [[], [good], rows]) {
      expect(Effect.runSync(decodeCredentialRows(input))).toEqual(bySchema(input))
    }
    // Extra columns are left out, as the schema leaves them out.
    expect(Effect.runSync(decodeCredentialRows([{ ...good, extra: 1 }]))).toEqual(bySchema([good]))
  })

  test("a row the schema refuses is a defect, whichever field is off", () => {
    const bad: ReadonlyArray<Record<string, unknown>> = [
      { ...good, id: 42 },
      { ...good, user_id: null },
      { ...good, org_id: null }, // a key whose user is gone
      { ...good, user_name: null },
      { ...good, key_hash: 42 },
      { ...good, scopes: '["read","admin"]' },
      { ...good, scopes: "read" },
      { ...good, scopes: '{"0":"read"}' },
      { ...good, status: "paused" },
      { ...good, expires_at: 0 },
      { ...good, last_used_at: 0 }
    ]
    for (const row of bad) {
      const exit = Effect.runSyncExit(decodeCredentialRows([good, row]))
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      expect(() => bySchema([row])).toThrow()
    }
  })
})
