/**
 * The operator's commands that no endpoint offers (`bun run cli …`): listing every user, key and OAuth client,
 * deleting a user or a client, revoking any key, and replacing a confidential client's lost secret.
 */

import { createHash } from "node:crypto"
import { Effect, Option } from "effect"
import { NotFound, ValidationFailed } from "../Domain/Errors.js"
import { randomBase62 } from "../Domain/Ids.js"
import { nowIso } from "../Domain/Time.js"
import { OperatorRepo } from "./Repo.js"

const sha256hex = (value: string) => createHash("sha256").update(value).digest("hex")

const found =
  <A>(kind: string, id: string) =>
  (option: Option.Option<A>) =>
    Option.match(option, { onNone: () => Effect.fail(NotFound.resource(kind, id)), onSome: Effect.succeed })

export class Operator extends Effect.Service<Operator>()("Operator", {
  dependencies: [OperatorRepo.Default],
  effect: Effect.gen(function* () {
    const repo = yield* OperatorRepo

    const listUsers = Effect.fn("Operator.listUsers")(function* () {
      return yield* Effect.orDie(repo.listUsers(undefined))
    })

    const deleteUser = Effect.fn("Operator.deleteUser")(function* (id: string) {
      const deleted = yield* Effect.orDie(repo.deleteUser(id))
      if (deleted.length === 0) return yield* NotFound.resource("user", id)
      return { id, deleted: true }
    })

    const listKeys = Effect.fn("Operator.listKeys")(function* (userId: string | null) {
      return yield* Effect.orDie(repo.listKeys({ userId, now: nowIso() }))
    })

    const revokeKey = Effect.fn("Operator.revokeKey")(function* (id: string) {
      return yield* Effect.flatMap(Effect.orDie(repo.revokeKey({ id, now: nowIso() })), found("API key", id))
    })

    const listClients = Effect.fn("Operator.listClients")(function* () {
      return yield* Effect.orDie(repo.listClients(undefined))
    })

    const deleteClient = Effect.fn("Operator.deleteClient")(function* (id: string) {
      const deleted = yield* Effect.orDie(repo.deleteClient(id))
      if (deleted.length === 0) return yield* NotFound.resource("OAuth client", id)
      return { client_id: id, deleted: true }
    })

    /** A new secret for a confidential client, shown this once; the old one stops working at once. */
    const rotateClientSecret = Effect.fn("Operator.rotateClientSecret")(function* (id: string) {
      const client = yield* Effect.flatMap(Effect.orDie(repo.findClient(id)), found("OAuth client", id))
      if (client.public) {
        return yield* ValidationFailed.field("client", "is public: it has no secret to rotate")
      }
      const secret = `pcc_${randomBase62(40)}`
      yield* Effect.orDie(repo.setClientSecret({ id, secretHash: sha256hex(secret) }))
      return { ...client, client_secret: secret }
    })

    return { listUsers, deleteUser, listKeys, revokeKey, listClients, deleteClient, rotateClientSecret } as const
  })
}) {}
