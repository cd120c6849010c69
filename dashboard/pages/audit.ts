/**
 * The audit logs (docs/audit.md): a team's **Audit log** (`/dashboard/teams/<id>/audit-log`, owners and admins)
 * and **Settings → Security log** (`/dashboard/settings/security-log`, the caller's own). Each is a table, newest
 * first, of who did what to what, with which kind of credential and from which address; filtered by action.
 */
import { api, dataOf, oneOf, pageOf, pageParam } from "../api.ts"
import { type Child, h } from "../dom.ts"
import { BASE, type PageContext } from "../router.ts"
import { type AuditAction, type AuditRecord, auditActions, type Page, type Team } from "../types.ts"
import { field, listRegion, readRecord, select, when } from "../ui.ts"
import { filterForm } from "./projects.ts"

/** Each action in words, as a sentence's verb phrase ("Ann deleted project Apollo"). */
export const actionWords: Record<AuditAction, string> = {
  "project.created": "created project",
  "project.updated": "updated project",
  "project.archived": "archived project",
  "project.unarchived": "unarchived project",
  "project.deleted": "deleted project",
  "deployment.started": "started a deployment",
  "deployment.completed": "completed a deployment",
  "deployment.failed": "failed a deployment",
  "member.invited": "invited a member",
  "member.joined": "joined the team",
  "member.role_changed": "changed a member's role",
  "member.removed": "removed a member",
  "invitation.declined": "declined an invitation",
  "invitation.revoked": "revoked an invitation",
  "team.created": "created team",
  "team.renamed": "renamed team",
  "team.deleted": "deleted team",
  "api_key.created": "created an API key",
  "api_key.revoked": "revoked an API key",
  "webhook.created": "created a webhook",
  "webhook.updated": "updated a webhook",
  "webhook.deleted": "deleted a webhook",
  "webhook.secret_rotated": "rotated a webhook secret",
  "webhook.recovered": "recovered a webhook",
  "webhook.tested": "sent a webhook a test event",
  "delivery.retried": "retried a delivery",
  "oauth_client.created": "created an OAuth app",
  "oauth_client.updated": "updated an OAuth app",
  "oauth_client.deleted": "deleted an OAuth app",
  "oauth_client.secret_rotated": "rotated an OAuth app secret",
  "authorization.granted": "authorized an app",
  "authorization.revoked": "revoked an app's access",
  "oauth_token.revoked": "revoked an OAuth token",
  "session.created": "signed in",
  "session.failed": "failed to sign in (wrong password)",
  "session.revoked": "signed a session out",
  "user.created": "created the account",
  "user.updated": "updated the account",
  "user.suspended": "suspended the account",
  "user.reactivated": "reactivated the account",
  "user.deleted": "deleted the account"
}

const credentialWords = { api_key: "API key", oauth: "OAuth app", session: "Session" } as const

const actorCell = (record: AuditRecord): Child =>
  record.actor.type === "user" ? record.actor.name : h("span", { class: "badge" }, record.actor.type)

/** The target's name when the record has one, else its kind and a short id (the ids are long). */
const targetCell = (record: AuditRecord): Child => {
  if (record.target_name !== null) return record.target_name
  if (record.target.type === "user" && record.actor.type === "user" && record.actor.id === record.target.id)
    return record.actor.name
  const id = record.target.id
  const short = id.length > 14 ? `${id.slice(0, 8)}…${id.slice(-4)}` : id
  return h("span", null, `${record.target.type.replace(/_/g, " ")} `, h("code", { title: id }, short))
}

const changesText = (record: AuditRecord): string | null =>
  record.changes === null
    ? null
    : Object.entries(record.changes)
        .map(([name, [before, after]]) => `${name}: ${JSON.stringify(before)} → ${JSON.stringify(after)}`)
        .join("; ")

const auditLog = async (
  context: PageContext,
  options: {
    readonly read: (query: {
      readonly page?: number | undefined
      readonly per_page: number
      readonly action?: AuditAction | undefined
    }) => Promise<Page<AuditRecord>>
    readonly caption: string
    readonly empty: string
  }
): Promise<void> => {
  const { q } = context
  const chosen = q("action")
  const filters = filterForm(
    context,
    "Filter the log",
    [
      field({
        label: "Action",
        name: "action",
        control: select(
          [["", "Every action"], ...auditActions.map((action) => [action, actionWords[action]] as const)],
          chosen
        )
      })
    ],
    ["action"]
  )
  const log = listRegion<AuditRecord>({
    caption: options.caption,
    fetch: () => options.read({ page: pageParam(q("page")), per_page: 20, action: oneOf(auditActions, chosen) }),
    pageHref: (n) => context.href({ page: n }),
    empty: chosen === "" ? options.empty : "Nothing of this kind.",
    loading: "Loading the log…",
    columns: [
      { label: "When", cell: (record) => when(record.created_at) },
      { label: "Who", cell: actorCell },
      {
        label: "What",
        cell: (record) => {
          const changes = changesText(record)
          return h(
            "span",
            null,
            actionWords[record.action],
            changes === null ? null : h("span", { class: "muted audit-changes" }, ` (${changes})`)
          )
        }
      },
      { label: "Target", cell: targetCell },
      {
        label: "Credential",
        cell: (record) => (record.credential === null ? "—" : credentialWords[record.credential.type])
      },
      { label: "Address", cell: (record) => h("code", { class: "nowrap" }, record.ip ?? "—") }
    ]
  })
  context.root.append(filters, log.element)
  await log.load()
}

export const securityLogPage = async (context: PageContext): Promise<void> => {
  context.title("Security log")
  context.root.append(
    h(
      "p",
      { class: "muted" },
      "What you did, and what was done to what is yours (your account, keys, webhooks, OAuth apps and projects), " +
        "newest first, with the kind of credential used and the address it came from."
    )
  )
  await auditLog(context, {
    read: (query) => api.GET("/v1/users/me/audit-log", { params: { query } }).then(pageOf),
    caption: "Security log, newest first",
    empty: "Nothing recorded yet."
  })
}

export const teamAuditHref = (id: string): string => `${BASE}/teams/${encodeURIComponent(id)}/audit-log`

/** The team page's tabs: Overview and, for owners and admins, Audit log. */
export const teamTabs = (team: Team, current: "overview" | "audit"): HTMLElement | null =>
  team.role === "owner" || team.role === "admin"
    ? h(
        "nav",
        { class: "tabs", "aria-label": "Team" },
        h(
          "ul",
          null,
          h(
            "li",
            null,
            h(
              "a",
              {
                href: `${BASE}/teams/${encodeURIComponent(team.id)}`,
                "aria-current": current === "overview" ? "page" : undefined
              },
              "Overview"
            )
          ),
          h(
            "li",
            null,
            h(
              "a",
              { href: teamAuditHref(team.id), "aria-current": current === "audit" ? "page" : undefined },
              "Audit log"
            )
          )
        )
      )
    : null

export const teamAuditPage = async (context: PageContext): Promise<void> => {
  const id = context.params[0] ?? ""
  const team = await readRecord(context, {
    read: () => api.GET("/v1/teams/{team_id}", { params: { path: { team_id: id } } }).then(dataOf),
    back: [`${BASE}/teams`, "← Teams"],
    label: "Team"
  })
  if (team === undefined) return
  context.title(`${team.name}: audit log`)
  const tabs = teamTabs(team, "audit")
  if (tabs === null) {
    context.root.append(h("p", { class: "empty" }, "Only the team's owners and admins can read its audit log."))
    return
  }
  context.root.append(tabs)
  await auditLog(context, {
    read: (query) =>
      api.GET("/v1/teams/{team_id}/audit-log", { params: { path: { team_id: id }, query } }).then(pageOf),
    caption: `Audit log of ${team.name}, newest first`,
    empty: "Nothing recorded yet."
  })
}
