/**
 * Teams, their members and invitations in SQL. Rows are decoded against the Domain records at this boundary.
 * An invitation's `expired` status is computed when read (a pending one whose `expires_at` has passed), so the
 * reading methods take the current time.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type * as Statement from "@effect/sql/Statement"
import { Effect, Schema } from "effect"
import { Invitation, type InvitationStatus } from "../Domain/Invitation.js"
import type { ListQuery } from "../Domain/Lists.js"
import { Team, TeamMember, TeamRole } from "../Domain/Team.js"
import { counterSum, listPage } from "../Sql/Lists.js"
import * as PageCache from "../Sql/PageCache.js"
import * as Rows from "../Sql/Repository.js"

export type TeamSort = "created_at" | "updated_at" | "name"
export type MemberSort = "joined_at" | "name"

const TeamKey = Schema.Struct({ teamId: Schema.String })
const MemberKey = Schema.Struct({ teamId: Schema.String, userId: Schema.String })
const Count = Schema.Struct({ n: Schema.Number })
const UserIdRow = Schema.Struct({ user_id: Schema.String })
const RoleRow = Schema.Struct({ role: TeamRole })

const TeamRow = Schema.Struct({
  id: Schema.String,
  org_id: Schema.String,
  name: Schema.String,
  created_at: Schema.String,
  updated_at: Schema.String
})

const MemberRow = Schema.Struct({
  team_id: Schema.String,
  user_id: Schema.String,
  role: TeamRole,
  joined_at: Schema.String
})

/** A team as the operator's `teams list` shows it. */
const TeamSummaryRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  created_at: Schema.String,
  members: Schema.Number,
  owner_id: Schema.NullOr(Schema.String),
  owner_email: Schema.NullOr(Schema.String)
})

export class TeamsRepo extends Effect.Service<TeamsRepo>()("TeamsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const teamColumns = sql`t.id, t.name, t.created_at, t.updated_at, m.role`
    const memberColumns = sql`u.id AS user_id, u.name, u.email, u.avatar_url, m.role, m.joined_at`

    const insert = SqlSchema.void({
      Request: TeamRow,
      execute: (team) => sql`INSERT INTO teams ${sql.insert(team)}`
    })

    /** The new name is copied onto each membership of the team: the change gets the large page cache. */
    const rename = (request: { readonly teamId: string; readonly name: string; readonly at: string }) =>
      PageCache.withLargeCache(
        Effect.asVoid(
          sql`UPDATE teams SET name = ${request.name}, updated_at = ${request.at} WHERE id = ${request.teamId}`
        )
      )

    const remove = SqlSchema.void({
      Request: TeamKey,
      execute: ({ teamId }) => sql`DELETE FROM teams WHERE id = ${teamId}`
    })

    /**
     * Takes the team's write lock for the rest of the transaction (a no-op update): membership changes that
     * check "is there another owner?" run one at a time per team on PostgreSQL too.
     */
    const lock = SqlSchema.void({
      Request: TeamKey,
      execute: ({ teamId }) => sql`UPDATE teams SET updated_at = updated_at WHERE id = ${teamId}`
    })

    const exists = SqlSchema.findOne({
      Request: TeamKey,
      Result: Schema.Struct({ id: Schema.String, name: Schema.String }),
      execute: ({ teamId }) => sql`SELECT id, name FROM teams WHERE id = ${teamId}`
    })

    /** A `count(*)` over one team's rows, its query built once. */
    const teamCount = (execute: (teamId: string) => Statement.Statement<object>) => {
      const query = SqlSchema.findAll({ Request: TeamKey, Result: Count, execute: ({ teamId }) => execute(teamId) })
      return (teamId: string) => Effect.map(query({ teamId }), (rows) => rows[0]?.n ?? 0)
    }

    const projectCount = teamCount(
      (teamId) => sql`SELECT CAST(count(*) AS INTEGER) AS n FROM projects WHERE team_id = ${teamId}`
    )

    /** The team as `userId` sees it (with their role); none when they are not a member. */
    const findFor = SqlSchema.findOne({
      Request: MemberKey,
      Result: Team,
      execute: ({ teamId, userId }) =>
        sql`SELECT ${teamColumns} FROM teams t JOIN team_members m ON m.team_id = t.id
          WHERE t.id = ${teamId} AND m.user_id = ${userId}`
    })

    const addMember = SqlSchema.void({
      Request: MemberRow,
      execute: (member) => sql`INSERT INTO team_members ${sql.insert(member)}`
    })

    const setRole = SqlSchema.void({
      Request: Schema.Struct({ teamId: Schema.String, userId: Schema.String, role: TeamRole }),
      execute: ({ role, teamId, userId }) =>
        sql`UPDATE team_members SET role = ${role} WHERE team_id = ${teamId} AND user_id = ${userId}`
    })

    const removeMember = SqlSchema.void({
      Request: MemberKey,
      execute: ({ teamId, userId }) => sql`DELETE FROM team_members WHERE team_id = ${teamId} AND user_id = ${userId}`
    })

    const roleOf = SqlSchema.findOne({
      Request: MemberKey,
      Result: RoleRow,
      execute: ({ teamId, userId }) =>
        sql`SELECT role FROM team_members WHERE team_id = ${teamId} AND user_id = ${userId}`
    })

    const ownerCount = teamCount(
      (teamId) =>
        sql`SELECT CAST(count(*) AS INTEGER) AS n FROM team_members WHERE team_id = ${teamId} AND role = 'owner'`
    )

    const member = SqlSchema.findOne({
      Request: MemberKey,
      Result: TeamMember,
      execute: ({ teamId, userId }) =>
        sql`SELECT ${memberColumns} FROM team_members m JOIN users u ON u.id = m.user_id
          WHERE m.team_id = ${teamId} AND m.user_id = ${userId}`
    })

    /** Whether the account with this (lower-cased) email is a member of the team. */
    const memberByEmail = SqlSchema.findOne({
      Request: Schema.Struct({ teamId: Schema.String, email: Schema.String }),
      Result: UserIdRow,
      execute: ({ email, teamId }) =>
        sql`SELECT m.user_id FROM team_members m JOIN users u ON u.id = m.user_id
          WHERE m.team_id = ${teamId} AND lower(u.email) = ${email}`
    })

    /** Owners and admins: who hears about a team's resources. */
    const managersOf = (teamId: string) =>
      Effect.map(
        SqlSchema.findAll({
          Request: TeamKey,
          Result: UserIdRow,
          execute: ({ teamId }) =>
            sql`SELECT user_id FROM team_members WHERE team_id = ${teamId} AND role IN ('owner', 'admin')`
        })({ teamId }),
        (rows) => rows.map((row) => row.user_id)
      )

    /**
     * Read from the memberships alone: each carries its team's name, `created_at` and `updated_at` (migration
     * 0007, kept equal to `teams` by triggers in the writing transaction). The page walks the user's
     * `(user_id, column, team_id)` index in order and stops after it, instead of sorting every team of the user
     * through the join; skipped rows (`OFFSET`) and the range count a search or date bound needs read no `teams`
     * row either.
     */
    const listFor = (userId: string, query: ListQuery<TeamSort>) =>
      listPage(
        Team,
        {
          select: sql`m.team_id AS id, m.team_name AS name, m.team_created_at AS created_at,
            m.team_updated_at AS updated_at, m.role`,
          from: sql`team_members m`,
          where: [sql`m.user_id = ${userId}`],
          columns: { created_at: "m.team_created_at", updated_at: "m.team_updated_at", name: "m.team_name" },
          createdColumn: "m.team_created_at",
          idColumn: "m.team_id",
          searchColumns: ["m.team_name"],
          total: counterSum(sql, "counts_members_user", [sql`user_id = ${userId}`])
        },
        query
      )

    /**
     * By `joined_at`, or by name: each membership carries its user's name (`user_name`, migration 0015, kept equal
     * to `users.name` by triggers in the writing transaction), so either sort walks a `(team_id, column, user_id)`
     * index in order and stops after the page; the join only adds the page's user columns.
     */
    const listMembers = (teamId: string, query: ListQuery<MemberSort>) =>
      listPage(
        TeamMember,
        {
          select: memberColumns,
          from: sql`team_members m JOIN users u ON u.id = m.user_id`,
          where: [sql`m.team_id = ${teamId}`],
          columns: { joined_at: "m.joined_at", name: "m.user_name" },
          createdColumn: "m.joined_at",
          idColumn: "m.user_id",
          searchColumns: ["u.name", "u.email"],
          total: counterSum(sql, "counts_members_team", [sql`team_id = ${teamId}`])
        },
        query
      )

    /** Every team with its number of members and its first owner (the CLI's `teams list`), oldest first. */
    const listAll = Rows.findAll({
      Request: Schema.Void,
      Result: TeamSummaryRow,
      execute: () =>
        sql`SELECT t.id, t.name, t.created_at,
              (SELECT CAST(count(*) AS INTEGER) FROM team_members m WHERE m.team_id = t.id) AS members,
              o.user_id AS owner_id, u.email AS owner_email
            FROM teams t
            LEFT JOIN team_members o ON o.team_id = t.id AND o.role = 'owner' AND o.user_id = (
              SELECT f.user_id FROM team_members f WHERE f.team_id = t.id AND f.role = 'owner'
              ORDER BY f.joined_at, f.user_id LIMIT 1)
            LEFT JOIN users u ON u.id = o.user_id
            ORDER BY t.created_at, t.id`
    })

    return {
      listAll: () => listAll(undefined),
      insert,
      rename,
      remove,
      lock,
      exists,
      projectCount,
      findFor,
      addMember,
      setRole,
      removeMember,
      roleOf,
      ownerCount,
      member,
      memberByEmail,
      managersOf,
      listFor,
      listMembers
    } as const
  })
}) {}

export type InvitationSort = "created_at"

const InvitationRow = Schema.Struct({
  id: Schema.String,
  team_id: Schema.String,
  email: Schema.String,
  role: TeamRole,
  status: Schema.Literal("pending"),
  invited_by: Schema.String,
  created_at: Schema.String,
  expires_at: Schema.String,
  answered_at: Schema.Null
})

export class InvitationsRepo extends Effect.Service<InvitationsRepo>()("InvitationsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    /** The stored status, except that a pending invitation past its expiry reads as `expired`. */
    const status = (now: string) =>
      sql`CASE WHEN i.status = 'pending' AND i.expires_at <= ${now} THEN 'expired' ELSE i.status END`
    /**
     * The rows whose status as read is `wanted`, as conditions on the stored columns: disjoint branches, each one
     * range of a `(team or email, status, created_at, id)` index (migration 0015) walked in order. An expression
     * over the columns (`status(now) = $wanted`) would give the same rows, but no index serves it, and PostgreSQL
     * estimates it at a fraction of a percent of the rows, so it reads them all and sorts them.
     *
     * `lapsed` is the branch of pending invitations past their expiry. For one email (a handful of invitations) it
     * is a range of the email's index. For a team it is read from migration 0016's table by `(team_id, expires_at)`:
     * a walk of the team's pending invitations reads every open one when few have lapsed, and PostgreSQL, which
     * expects none to have lapsed, reads the whole table for it. That table's lapsed range holds only those that
     * lapsed since the retention sweep last marked them `expired`, so the branch reads and sorts that short range.
     */
    const statusBranches = (
      wanted: InvitationStatus,
      now: string,
      lapsed: Statement.Fragment = sql`i.expires_at <= ${now}`
    ): ReadonlyArray<ReadonlyArray<Statement.Fragment>> =>
      wanted === "pending"
        ? [[sql`i.status = 'pending'`, sql`i.expires_at > ${now}`]]
        : wanted === "expired"
          ? [[sql`i.status = 'expired'`], [sql`i.status = 'pending'`, lapsed]]
          : [[sql`i.status = ${wanted}`]]
    /** A team's stored-pending invitations past their expiry, in migration 0016's table. */
    const lapsedOfTeam = (teamId: string, now: string) =>
      sql`invitation_expiries WHERE team_id = ${teamId} AND expires_at <= ${now}`
    /**
     * With the team's and the inviter's names (both cascade-delete their invitations, so each row has both), each
     * looked up by primary key for the rows read: the list's plan is the walk of an `invitations` index alone, which
     * no join strategy can turn into a sort (PostgreSQL merge-joins a page it estimates at one row, then sorts it).
     */
    const columns = (now: string) =>
      sql`i.id, i.team_id, i.email, i.role, ${status(now)} AS status, i.invited_by, i.created_at, i.expires_at,
        i.answered_at, (SELECT t.name FROM teams t WHERE t.id = i.team_id) AS team_name,
        (SELECT u.name FROM users u WHERE u.id = i.invited_by) AS invited_by_name`

    const insert = SqlSchema.void({
      Request: InvitationRow,
      execute: (row) => sql`INSERT INTO invitations ${sql.insert(row)}`
    })

    /** Marks pending invitations of this team and email that have lapsed as `expired` (so a new one may be made). */
    const expireLapsed = SqlSchema.void({
      Request: Schema.Struct({ teamId: Schema.String, email: Schema.String, now: Schema.String }),
      execute: ({ email, now, teamId }) =>
        sql`UPDATE invitations SET status = 'expired'
          WHERE team_id = ${teamId} AND email = ${email} AND status = 'pending' AND expires_at <= ${now}`
    })

    const find = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.String, now: Schema.String }),
      Result: Invitation,
      execute: ({ id, now }) => sql`SELECT ${columns(now)} FROM invitations i WHERE i.id = ${id}`
    })

    const pendingFor = SqlSchema.findOne({
      Request: Schema.Struct({ teamId: Schema.String, email: Schema.String, now: Schema.String }),
      Result: Schema.Struct({ id: Schema.String }),
      execute: ({ email, now, teamId }) =>
        sql`SELECT id FROM invitations
          WHERE team_id = ${teamId} AND email = ${email} AND status = 'pending' AND expires_at > ${now}`
    })

    /**
     * Moves a still-open invitation to `to` (accepted, declined or revoked); none when it was no longer pending
     * or had expired, so two answers cannot both win.
     */
    const close = SqlSchema.findOne({
      Request: Schema.Struct({
        id: Schema.String,
        to: Schema.Literal("accepted", "declined", "revoked"),
        answeredAt: Schema.String,
        now: Schema.String
      }),
      Result: Schema.Struct({ id: Schema.String }),
      execute: ({ answeredAt, id, now, to }) =>
        sql`UPDATE invitations SET status = ${to}, answered_at = ${answeredAt}
          WHERE id = ${id} AND status = 'pending' AND expires_at > ${now}
          RETURNING id`
    })

    /**
     * Counters hold the stored status; `pending` and `expired` depend on the clock (a pending invitation past its
     * expiry reads as expired). So those two are the counters corrected by the team's stored-pending invitations
     * already past their expiry, counted in migration 0016's table: a range that holds only those that lapsed since
     * the retention sweep last marked them `expired`.
     */
    const teamTotal = (teamId: string, status: InvitationStatus | undefined, now: string) => {
      const stored = (wanted: InvitationStatus) =>
        counterSum(sql, "counts_invitations", [sql`team_id = ${teamId}`, sql`status = ${wanted}`])
      const lapsed = sql`(SELECT count(*) FROM ${lapsedOfTeam(teamId, now)})`
      if (status === undefined) return counterSum(sql, "counts_invitations", [sql`team_id = ${teamId}`])
      if (status === "pending") return sql`(${stored("pending")} - ${lapsed})`
      if (status === "expired") return sql`(${stored("expired")} + ${lapsed})`
      return stored(status)
    }

    const listForTeam = (teamId: string, query: ListQuery<InvitationSort, InvitationStatus>, now: string) =>
      listPage(
        Invitation,
        {
          select: columns(now),
          from: sql`invitations i`,
          where: [sql`i.team_id = ${teamId}`],
          branches:
            query.status !== undefined
              ? statusBranches(query.status, now, sql`i.id IN (SELECT invitation_id FROM ${lapsedOfTeam(teamId, now)})`)
              : [[]],
          columns: { created_at: "i.created_at" },
          createdColumn: "i.created_at",
          idColumn: "i.id",
          searchColumns: ["i.email"],
          total: teamTotal(teamId, query.status, now)
        },
        query
      )

    /**
     * Invitations addressed to an email (whatever its case) with this status (as read: expiry computed), or all.
     * No counter: pending and expired depend on the clock, and one email is invited a handful of times, so the
     * count stays small.
     */
    const listAddressedTo = (
      email: string,
      only: InvitationStatus | "all",
      query: ListQuery<InvitationSort>,
      now: string
    ) =>
      listPage(
        Invitation,
        {
          select: columns(now),
          from: sql`invitations i`,
          where: [sql`i.email = ${email.toLowerCase()}`],
          branches: only === "all" ? [[]] : statusBranches(only, now),
          columns: { created_at: "i.created_at" },
          createdColumn: "i.created_at",
          idColumn: "i.id",
          searchColumns: ["i.email"]
        },
        query
      )

    /** The account with this email, if any (emails are stored lower-cased). */
    const userByEmail = SqlSchema.findOne({
      Request: Schema.Struct({ email: Schema.String }),
      Result: Schema.Struct({ id: Schema.String, email: Schema.String }),
      execute: ({ email }) => sql`SELECT id, email FROM users WHERE lower(email) = ${email}`
    })

    return { insert, expireLapsed, find, pendingFor, close, listForTeam, listAddressedTo, userByEmail } as const
  })
}) {}
