/**
 * The audit logs' reads: a team's (its owners and admins only) and the caller's own security log. Records are
 * written by the outbox (`Events.record`, in the change's own transaction: see src/Events/Events.ts, which documents
 * how to record a new action) and never changed or deleted but by the retention sweep (`AUDIT_RETENTION`).
 */
import { Effect } from "effect"
import type { Principal } from "../Domain/Principal.js"
import { manages } from "../Domain/Team.js"
import { traced } from "../Observability/Traced.js"
import { needsRole, Teams } from "../Teams/Teams.js"
import { type AuditListQuery, AuditRepo } from "./Repo.js"

export class Audit extends Effect.Service<Audit>()("Audit", {
  dependencies: [AuditRepo.Default, Teams.Default],
  effect: Effect.gen(function* () {
    const repo = yield* AuditRepo
    const teams = yield* Teams

    /** A team's log: 404 for a non-member (as every team read), 403 for a plain member. */
    const teamLog = traced("Audit.teamLog")(function* (principal: Principal, teamId: string, query: AuditListQuery) {
      const role = yield* teams.roleIn(teamId, principal.userId)
      if (!manages(role)) return yield* needsRole("Reading a team's audit log", "owner or admin", role)
      return yield* repo.listForTeam(teamId, query)
    })

    /** The caller's security log: the records they made and those about what is theirs. */
    const myLog = traced("Audit.myLog")(function* (principal: Principal, query: AuditListQuery) {
      return yield* repo.listForUser(principal.userId, query)
    })

    return { teamLog, myLog } as const
  })
}) {}
