/**
 * The JWT signing keys table: keys as JWK JSON text, retired keys kept until their last token has expired. The
 * private key is stored encrypted, its `kid` the associated data (src/Secrets/KeyRing.ts): written encrypted here,
 * read back decrypted.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option, Schema } from "effect"
import { KeyRing } from "../Secrets/KeyRing.js"
import * as Rows from "../Sql/Repository.js"

export const KeyRow = Schema.Struct({
  kid: Schema.String,
  private_jwk: Schema.String,
  public_jwk: Schema.String,
  created_at: Schema.String,
  retired_at: Schema.NullOr(Schema.String)
})
export type KeyRow = typeof KeyRow.Type

const PrivateKey = Schema.Struct({ kid: Schema.String, private_jwk: Schema.String })
const PublicKey = Schema.Struct({ kid: Schema.String, public_jwk: Schema.String })

export class SigningKeysRepo extends Effect.Service<SigningKeysRepo>()("SigningKeysRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const keyRing = yield* KeyRing

    const insertRow = Rows.write({
      Request: KeyRow,
      execute: (row) => sql`INSERT INTO jwt_signing_keys ${sql.insert({ ...row })}`
    })
    const insert = (row: KeyRow) =>
      Effect.flatMap(keyRing.encrypt(row.private_jwk, row.kid), (private_jwk) => insertRow({ ...row, private_jwk }))

    const activeCount = Effect.map(
      Rows.single({
        Request: Schema.Void,
        Result: Schema.Struct({ n: Rows.Count }),
        execute: () => sql`SELECT COUNT(*) AS n FROM jwt_signing_keys WHERE retired_at IS NULL`
      })(undefined),
      (row) => row.n
    )

    /** The newest active key, decrypted: the one that signs. A key that cannot be decrypted is a defect. */
    const newestActive = Rows.findOne({
      Request: Schema.Void,
      Result: PrivateKey,
      execute: () =>
        sql`SELECT kid, private_jwk FROM jwt_signing_keys WHERE retired_at IS NULL ORDER BY created_at DESC, kid DESC LIMIT 1`
    })(undefined).pipe(
      Effect.flatMap(
        Option.match({
          onNone: () => Effect.succeed(Option.none()),
          onSome: (row) =>
            Effect.map(Effect.orDie(keyRing.decrypt(row.private_jwk, row.kid)), (private_jwk) =>
              Option.some({ kid: row.kid, private_jwk })
            )
        })
      )
    )

    /** A key that may still verify: active, or retired after `oldestStillValid`. */
    const findVerifying = Rows.findOne({
      Request: Schema.Struct({ kid: Schema.String, oldestStillValid: Schema.String }),
      Result: PublicKey,
      execute: ({ kid, oldestStillValid }) =>
        sql`
          SELECT kid, public_jwk FROM jwt_signing_keys
          WHERE kid = ${kid} AND (retired_at IS NULL OR retired_at > ${oldestStillValid})`
    })

    /** Every key that may still verify, newest first (the JWKS). */
    const listVerifying = Rows.findAll({
      Request: Schema.String,
      Result: PublicKey,
      execute: (oldestStillValid) =>
        sql`
          SELECT kid, public_jwk FROM jwt_signing_keys
          WHERE retired_at IS NULL OR retired_at > ${oldestStillValid} ORDER BY created_at DESC, kid DESC`
    })

    const retireAll = Rows.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ kid: Schema.String }),
      execute: (now) => sql`UPDATE jwt_signing_keys SET retired_at = ${now} WHERE retired_at IS NULL RETURNING kid`
    })

    /** Retires the active key(s) and adds `row`, in one transaction; answers the retired kids. */
    const rotate = (row: KeyRow) =>
      retireAll(row.created_at).pipe(
        Effect.zipLeft(insert(row)),
        sql.withTransaction,
        Effect.map((retired) => retired.map((r) => r.kid))
      )

    return {
      insert,
      activeCount,
      newestActive,
      findVerifying: (kid: string, oldestStillValid: string) => findVerifying({ kid, oldestStillValid }),
      listVerifying,
      rotate
    } as const
  })
}) {}
