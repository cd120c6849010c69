/**
 * The audit logs' reads: a team's (its owners and admins only) and the caller's own security log. Records are
 * written by the outbox (`Events.record`, in the change's own transaction: see src/Events/Events.ts, which documents
 * how to record a new action) and never changed or deleted but by the retention sweep (`AUDIT_RETENTION`).
 *
 * `after`: the records of that log that follow a given one in its sequence, oldest first (src/Sql/Sequence.ts, as the
 * events feed's cursor). The named record must be one of that log's (else 404), unless retention removed it (410).
 */
import { Effect, type Option } from "effect"
import type { AuditAction, AuditRecord } from "../Domain/Audit.js"
import { CursorExpired, NotFound } from "../Domain/Errors.js"
import type { AuditId } from "../Domain/Ids.js"
import type { CursorPage } from "../Domain/Lists.js"
import type { Principal } from "../Domain/Principal.js"
import { manages } from "../Domain/Team.js"
import { traced } from "../Observability/Traced.js"
import { dieOnSqlError, orDie } from "../Sql/Repository.js"
import { locate, type Position } from "../Sql/Sequence.js"
import { needsRole, Teams } from "../Teams/Teams.js"
import { AUDIT_SEQUENCE, type AuditListQuery, AuditRepo } from "./Repo.js"

/** A cursor read of an audit log: the records after `after` that pass the filters, `per_page` of them. */
export interface AuditCursorQuery {
  readonly after: AuditId
  readonly per_page: number
  readonly actions?: ReadonlyArray<AuditAction> | undefined
  readonly actor_id?: string | undefined
}

export class Audit extends Effect.Service<Audit>()("Audit", {
  dependencies: [AuditRepo.Default, Teams.Default],
  effect: Effect.gen(function* () {
    const repo = orDie(yield* AuditRepo)
    const teams = yield* Teams

    const canReadTeamLog = Effect.fnUntraced(function* (principal: Principal, teamId: string) {
      const role = yield* teams.roleIn(teamId, principal.userId)
      if (!manages(role)) return yield* needsRole("Reading a team's audit log", "owner or admin", role)
    })

    /** Where a cursor starts: 410 when retention removed the record, 404 when it is not in this log. */
    const start = Effect.fnUntraced(function* (id: AuditId, found: Effect.Effect<Option.Option<Position>>) {
      const from = yield* dieOnSqlError(locate(AUDIT_SEQUENCE, id, found, repo.exists(id)))
      if (from === "removed") {
        return yield* new CursorExpired({
          message: `The audit record ${id} has been removed by retention; start again from created_after`
        })
      }
      if (from === "unknown") return yield* NotFound.resource("audit record", id)
      return from
    })

    /** A team's log: 404 for a non-member (as every team read), 403 for a plain member. */
    const teamLog = traced("Audit.teamLog")(function* (principal: Principal, teamId: string, query: AuditListQuery) {
      yield* canReadTeamLog(principal, teamId)
      return yield* repo.listForTeam(teamId, query)
    })

    /** A team's log after a cursor, oldest first: the record must be the team's. */
    const teamLogAfter = traced("Audit.teamLogAfter")(function* (
      principal: Principal,
      teamId: string,
      query: AuditCursorQuery
    ) {
      yield* canReadTeamLog(principal, teamId)
      const from = yield* start(query.after, repo.teamPosition(teamId, query.after))
      const items = yield* repo.afterForTeam(teamId, { ...query, from, limit: query.per_page })
      return { items, per_page: query.per_page } satisfies CursorPage<AuditRecord>
    })

    /** The caller's security log after a cursor, oldest first: the record must be one they made or one of theirs. */
    const myLogAfter = traced("Audit.myLogAfter")(function* (principal: Principal, query: AuditCursorQuery) {
      const from = yield* start(query.after, repo.userPosition(principal.userId, query.after))
      const items = yield* repo.afterForUser(principal.userId, { ...query, from, limit: query.per_page })
      return { items, per_page: query.per_page } satisfies CursorPage<AuditRecord>
    })

    /** The caller's security log: the records they made and those about what is theirs. */
    const myLog = traced("Audit.myLog")(function* (principal: Principal, query: AuditListQuery) {
      return yield* repo.listForUser(principal.userId, query)
    })

    return { teamLog, myLog, teamLogAfter, myLogAfter } as const
  })
}) {}
