/**
 * The grants a user gave OAuth clients (`/v1/authorizations`, GitHub's "Authorized OAuth Apps"): one per user and
 * client, made at the first consent. Revoking one deletes it with every code and token issued under it, so those
 * tokens answer 401 at once; the client must ask for consent again.
 */
import { Effect } from "effect"
import { NotFound } from "../Domain/Errors.js"
import type { GrantId } from "../Domain/Ids.js"
import type { ListQuery } from "../Domain/Lists.js"
import type { AuthorizationSort } from "../Domain/OAuth.js"
import type { Principal } from "../Domain/Principal.js"
import { Events } from "../Events/Events.js"
import { traced } from "../Observability/Traced.js"
import { untaggedIfMatch } from "../Sql/Preconditions.js"
import { dieOnSqlError, orDie } from "../Sql/Repository.js"
import { OAuthAppsRepo } from "./Apps/Repo.js"

export class OAuthGrants extends Effect.Service<OAuthGrants>()("OAuthGrants", {
  dependencies: [OAuthAppsRepo.Default, Events.Default],
  effect: Effect.gen(function* () {
    const repo = orDie(yield* OAuthAppsRepo)
    const events = yield* Events
    const transaction = <A, E, R>(change: Effect.Effect<A, E, R>) => dieOnSqlError(events.transaction(change))

    const list = traced("OAuthGrants.list")(function* (principal: Principal, query: ListQuery<AuthorizationSort>) {
      return yield* repo.listGrants(principal.userId, query)
    })

    const revoke = traced("OAuthGrants.revoke")(function* (principal: Principal, id: GrantId) {
      const deleted = yield* repo.deleteGrant({ userId: principal.userId, id }).pipe(
        Effect.tap((done) =>
          done
            ? Effect.zipRight(
                untaggedIfMatch,
                events.record("authorization.revoked", { type: "authorization", id }, { user: principal.userId })
              )
            : Effect.void
        ),
        transaction
      )
      if (!deleted) return yield* NotFound.resource("authorization", id)
    })

    return { list, revoke } as const
  })
}) {}
