/**
 * Teams: your teams, creating one, and the invitations addressed to you (Accept / Decline); a team's page with its
 * members (change role, remove), its invitations (status filter, invite, revoke), renaming and deleting it.
 * Endpoints as decisions.md ("Teams, members and invitations") gives them.
 */
import { api, bodyOf, dataOf, oneOf, pageParam, taggedOf } from "../api.ts"
import { add, h } from "../dom.ts"
import { BASE, flashNext, navigate, type PageContext } from "../router.ts"
import type { Invitation, Member, Role, Team } from "../types.ts"
import {
  actionButton,
  announce,
  badge,
  closeForm,
  confirmAction,
  copyableId,
  field,
  formValue,
  input,
  listRegion,
  onSubmit,
  readTaggedRecord,
  reloadWhenChangedMeanwhile,
  select,
  showWhenChangedMeanwhile,
  when
} from "../ui.ts"
import { teamTabs } from "./audit.ts"
import { filterForm } from "./projects.ts"

const teamHref = (id: string) => `${BASE}/teams/${encodeURIComponent(id)}`
const roles: ReadonlyArray<readonly [Role, string]> = [
  ["member", "Member"],
  ["admin", "Admin"],
  ["owner", "Owner"]
]
const roleOf = (text: string): Role => oneOf(["member", "admin", "owner"], text) ?? "member"

export const teamsPage = async (context: PageContext): Promise<void> => {
  const { q } = context
  context.title("Teams")

  const invitations = listRegion<Invitation>({
    caption: "Invitations for you",
    fetch: () => api.GET("/v1/invitations", { params: { query: { per_page: 100 } } }).then(bodyOf),
    empty: "No pending invitations.",
    columns: [
      { label: "Team", cell: (inv) => h("strong", null, inv.team_name) },
      { label: "Invited by", cell: (inv) => inv.invited_by_name },
      { label: "Role", cell: (inv) => inv.role },
      { label: "Invited", cell: (inv) => when(inv.created_at) },
      { label: "Expires", cell: (inv) => when(inv.expires_at) },
      {
        label: "Answer",
        cell: (inv) =>
          h(
            "div",
            { class: "row-actions" },
            actionButton(
              "Accept",
              async () => {
                await api.POST("/v1/invitations/{invitation_id}/accept", {
                  params: { path: { invitation_id: inv.id } }
                })
                flashNext(`Invitation accepted: you are a member of ${inv.team_name}.`)
                navigate(teamHref(inv.team_id))
              },
              { className: "primary", ariaLabel: `Accept the invitation to ${inv.team_name}` }
            ),
            actionButton(
              "Decline",
              async () => {
                await api.POST("/v1/invitations/{invitation_id}/decline", {
                  params: { path: { invitation_id: inv.id } }
                })
                await invitations.load()
                announce(`Invitation to ${inv.team_name} declined.`)
              },
              { ariaLabel: `Decline the invitation to ${inv.team_name}` }
            )
          )
      }
    ]
  })

  const teams = listRegion<Team>({
    caption: "Your teams",
    columns: [
      { label: "Name", cell: (team) => h("a", { href: teamHref(team.id) }, team.name) },
      { label: "Created", cell: (team) => when(team.created_at) }
    ],
    empty: "You are not in a team yet.",
    fetch: () =>
      api
        .GET("/v1/teams", {
          params: {
            query: {
              page: pageParam(q("page")),
              per_page: 20,
              search: q("search") || undefined,
              sort: "name",
              order: "asc"
            }
          }
        })
        .then(bodyOf),
    pageHref: (n) => context.href({ page: n })
  })

  const create = onSubmit(
    h(
      "form",
      { class: "stack", "aria-label": "New team" },
      field({ label: "Name", name: "name", control: input({ required: true, maxlength: 100 }) }),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Create team"))
    ),
    async (form) => {
      const team = await api.POST("/v1/teams", { body: { name: formValue(form, "name") } }).then(dataOf)
      flashNext(`Team “${team.name}” created; you are its owner.`)
      navigate(teamHref(team.id))
    }
  )

  context.root.append(
    h(
      "section",
      { class: "section", "aria-labelledby": "mine-title" },
      h("h2", { id: "mine-title" }, "Invitations for you"),
      invitations.element
    ),
    h(
      "section",
      { class: "section", "aria-labelledby": "teams-title" },
      h("h2", { id: "teams-title" }, "Your teams"),
      h("details", { class: "card create" }, h("summary", null, "New team"), create),
      teams.element
    )
  )
  await Promise.all([invitations.load(), teams.load()])
}

export const teamPage = async (context: PageContext): Promise<void> => {
  const { q } = context
  const id = context.params[0] ?? ""
  const byId = { params: { path: { team_id: id } } }
  const tagged = await readTaggedRecord(context, {
    read: () => api.GET("/v1/teams/{team_id}", byId).then(taggedOf),
    back: [`${BASE}/teams`, "← Teams"],
    label: "Team"
  })
  if (tagged === undefined) return
  const team = tagged.data
  // Renaming and deleting send the ETag the page was drawn from, so they never overwrite someone else's change.
  let etag = tagged.etag
  /** `byId` with the `If-Match` of the version the page was drawn from. */
  const ifUnchanged = () => ({ params: { path: { team_id: id }, header: { "If-Match": etag } } })
  context.title(team.name, team.role === undefined ? null : h("span", { class: "badge" }, `you: ${team.role}`))
  add(context.root, teamTabs(team, "overview"))
  const manages = team.role === "owner" || team.role === "admin"
  const me = await api
    .GET("/v1/users/me")
    .then(dataOf)
    .catch(() => undefined)
  /** Whether someone besides the caller owns the team: the last owner cannot leave (the service answers 409). */
  const anotherOwner = async (): Promise<boolean> => {
    for (let page = 1; ; page++) {
      const { data, meta } = await api
        .GET("/v1/teams/{team_id}/members", { params: { path: { team_id: id }, query: { page, per_page: 100 } } })
        .then(bodyOf)
      if (data.some((m) => m.role === "owner" && m.user_id !== me?.id)) return true
      if (data.length === 0 || page * meta.per_page >= meta.total) return false
    }
  }
  const soleOwner = team.role === "owner" && !(await anotherOwner().catch(() => false))

  const members = listRegion<Member>({
    caption: "Members",
    loading: "Loading members…",
    fetch: () =>
      api
        .GET("/v1/teams/{team_id}/members", {
          params: {
            path: { team_id: id },
            query: { page: pageParam(q("mpage")), per_page: 50, sort: "name", order: "asc" }
          }
        })
        .then(bodyOf),
    pageHref: (n) => context.href({ mpage: n }),
    empty: "No members.",
    columns: [
      { label: "Name", cell: (m) => m.name },
      { label: "Email", cell: (m) => m.email },
      {
        label: "Role",
        cell: (m) => {
          if (!manages) return m.role
          const choice = select(roles, m.role, { "aria-label": `Role of ${m.name}` })
          return h(
            "div",
            { class: "row-actions" },
            choice,
            actionButton(
              "Change",
              async () => {
                // Refused (the last owner, a role the caller may not give): the list shows the role they still have.
                await api
                  .PUT("/v1/teams/{team_id}/members/{user_id}", {
                    params: { path: { team_id: id, user_id: m.user_id } },
                    body: { role: roleOf(choice.value) }
                  })
                  .catch((error: unknown) => {
                    choice.value = m.role
                    throw error
                  })
                flashNext(`${m.name} is now ${choice.value === "member" ? "a member" : `an ${choice.value}`}.`)
                context.refresh()
              },
              { ariaLabel: `Change the role of ${m.name}` }
            )
          )
        }
      },
      { label: "Joined", cell: (m) => when(m.joined_at) },
      {
        label: "Actions",
        cell: (m) =>
          m.user_id === me?.id && soleOwner
            ? h("span", { class: "muted" }, "You are the only owner: make someone else owner before you leave.")
            : m.user_id === me?.id
              ? actionButton(
                  "Leave",
                  async () => {
                    if (!(await confirmAction(`Leave ${team.name}?`, "Leave team"))) return
                    await api.DELETE("/v1/teams/{team_id}/members/{user_id}", {
                      params: { path: { team_id: id, user_id: m.user_id } }
                    })
                    flashNext(`You left ${team.name}.`)
                    navigate(`${BASE}/teams`)
                  },
                  { className: "danger", ariaLabel: `Leave ${team.name}` }
                )
              : manages
                ? actionButton(
                    "Remove",
                    async () => {
                      if (!(await confirmAction(`Remove ${m.name} (${m.email}) from ${team.name}?`, "Remove member")))
                        return
                      await api.DELETE("/v1/teams/{team_id}/members/{user_id}", {
                        params: { path: { team_id: id, user_id: m.user_id } }
                      })
                      await members.load()
                      announce(`${m.name} removed from ${team.name}.`)
                    },
                    { className: "danger", ariaLabel: `Remove ${m.name}` }
                  )
                : h("span", { class: "muted" }, "—")
      }
    ]
  })

  const invitations = listRegion<Invitation>({
    caption: "Invitations",
    loading: "Loading invitations…",
    fetch: () =>
      api
        .GET("/v1/teams/{team_id}/invitations", {
          params: {
            path: { team_id: id },
            query: {
              page: pageParam(q("ipage")),
              per_page: 20,
              status: oneOf(["pending", "accepted", "declined", "revoked", "expired"], q("istatus"))
            }
          }
        })
        .then(bodyOf),
    pageHref: (n) => context.href({ ipage: n }),
    empty: q("istatus") === "" ? "No invitations." : `No ${q("istatus")} invitations.`,
    columns: [
      { label: "Email", cell: (inv) => inv.email },
      { label: "Role", cell: (inv) => inv.role },
      { label: "Status", cell: (inv) => badge(inv.status) },
      { label: "Invited by", cell: (inv) => inv.invited_by_name },
      { label: "Invited", cell: (inv) => when(inv.created_at) },
      { label: "Expires", cell: (inv) => when(inv.expires_at) },
      {
        label: "Actions",
        cell: (inv) =>
          inv.status === "pending" && manages
            ? actionButton(
                "Revoke",
                async () => {
                  if (!(await confirmAction(`Revoke the invitation to ${inv.email}?`, "Revoke invitation"))) return
                  await api.DELETE("/v1/teams/{team_id}/invitations/{invitation_id}", {
                    params: { path: { team_id: id, invitation_id: inv.id } }
                  })
                  await invitations.load()
                  announce(`Invitation to ${inv.email} revoked.`)
                },
                { className: "danger", ariaLabel: `Revoke the invitation to ${inv.email}` }
              )
            : inv.answered_at === null
              ? h("span", { class: "muted" }, "—")
              : // What happened and when, e.g. "Revoked 23 Nov 2026, 14:14:05" (expired ones have no answer time).
                h(
                  "span",
                  { class: "muted" },
                  `${inv.status.charAt(0).toUpperCase()}${inv.status.slice(1)} `,
                  when(inv.answered_at)
                )
      }
    ]
  })

  const invite = onSubmit(
    h(
      "form",
      { class: "stack", "aria-label": "Invite someone" },
      field({ label: "Email", name: "email", control: input({ type: "email", required: true }) }),
      field({
        label: "Role",
        name: "role",
        control: select(roles, "member"),
        hint: "Only an owner can invite an owner."
      }),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Send invitation"))
    ),
    async (form) => {
      const sent = dataOf(
        await api.POST("/v1/teams/{team_id}/invitations", {
          ...byId,
          body: { email: formValue(form, "email"), role: roleOf(formValue(form, "role")) }
        })
      )
      closeForm(form)
      await invitations.load()
      announce(`Invitation sent to ${sent.email} (${sent.role}).`)
    }
  )

  const rename = onSubmit(
    h(
      "form",
      { class: "stack", "aria-label": "Rename team" },
      field({ label: "Name", name: "name", control: input({ value: team.name, required: true, maxlength: 100 }) }),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Rename"))
    ),
    async (form) => {
      const saved = await api
        .PUT("/v1/teams/{team_id}", { ...ifUnchanged(), body: { name: formValue(form, "name") } })
        .then(
          () => true,
          showWhenChangedMeanwhile(
            form,
            "team",
            () => api.GET("/v1/teams/{team_id}", byId).then(taggedOf),
            (current) => [["Name", current.name]],
            (tag) => {
              etag = tag
            }
          )
        )
      if (!saved) return
      flashNext("Team renamed.")
      context.refresh()
    }
  )

  const filters = filterForm(
    context,
    "Filter invitations",
    [
      field({
        label: "Status",
        name: "istatus",
        control: select(
          [
            ["", "Any"],
            ["pending", "Pending"],
            ["accepted", "Accepted"],
            ["declined", "Declined"],
            ["revoked", "Revoked"],
            ["expired", "Expired"]
          ],
          q("istatus")
        )
      })
    ],
    ["istatus"],
    "ipage"
  )

  add(
    context.root,
    h(
      "dl",
      { class: "facts" },
      h("dt", null, "ID"),
      h("dd", null, copyableId("team", team.id)),
      h("dt", null, "Created"),
      h("dd", null, when(team.created_at))
    ),
    manages
      ? h(
          "div",
          { class: "actions" },
          team.role === "owner"
            ? actionButton(
                "Delete team",
                async () => {
                  if (
                    !(await confirmAction(
                      `Delete the team “${team.name}”? Its projects must be moved or deleted first.`,
                      "Delete team"
                    ))
                  )
                    return
                  const deleted = await api
                    .DELETE("/v1/teams/{team_id}", ifUnchanged())
                    .then(() => true, reloadWhenChangedMeanwhile(context, "team", "it was not deleted"))
                  if (!deleted) return
                  flashNext(`Team “${team.name}” deleted.`)
                  navigate(`${BASE}/teams`)
                },
                { className: "danger" }
              )
            : null
        )
      : null,
    manages ? h("details", { class: "card" }, h("summary", null, "Rename team"), rename) : null,
    h(
      "section",
      { class: "section", "aria-labelledby": "members-title" },
      h("h2", { id: "members-title" }, "Members"),
      members.element
    ),
    h(
      "section",
      { class: "section", "aria-labelledby": "invitations-title" },
      h("h2", { id: "invitations-title" }, "Invitations"),
      manages ? h("details", { class: "card create" }, h("summary", null, "Invite someone"), invite) : null,
      filters,
      invitations.element
    )
  )
  await Promise.all([members.load(), invitations.load()])
}
