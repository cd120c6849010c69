/** Projects: the list (search, status, sort, paging), creating one, and a project's page with its deployments. */
import { api, bodyOf, dataOf, isChangedMeanwhile, oneOf, pageParam, taggedOf, tagOfShown } from "../api.ts"
import { h } from "../dom.ts"
import { BASE, flashNext, navigate, type PageContext } from "../router.ts"
import type { Deployment, Project, Team, User } from "../types.ts"
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

const visibilities = [
  ["private", "Private (only you)"],
  ["team", "Team (its members)"],
  ["public", "Public"]
] as const
const visibilityOf = (text: string) => oneOf(["private", "team", "public"], text) ?? "private"

const projectLink = (project: Project) =>
  h("a", { href: `${BASE}/projects/${encodeURIComponent(project.id)}` }, project.name)

/** A GET-style filter form: applying it changes the address (so filters survive reloads and can be shared). */
export const filterForm = (
  context: PageContext,
  label: string,
  fields: ReadonlyArray<HTMLElement>,
  names: ReadonlyArray<string>,
  pageParam = "page"
): HTMLFormElement => {
  const form = h(
    "form",
    { class: "filters", role: "search", "aria-label": label },
    fields,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Apply"))
  )
  form.addEventListener("submit", (event) => {
    event.preventDefault()
    const query: Record<string, string | undefined> = { [pageParam]: undefined }
    for (const name of names) query[name] = formValue(form, name) || undefined
    navigate(context.href(query))
  })
  return form
}

const textarea = (value = "") => {
  const area = h("textarea", { rows: 3 })
  area.value = value
  return area
}

export const projectsPage = async (context: PageContext): Promise<void> => {
  const { q } = context
  context.title("Projects")

  const teamSelect = select([["", "No team"]], "")
  const create = h(
    "details",
    { class: "card create" },
    h("summary", null, "New project"),
    onSubmit(
      h(
        "form",
        { class: "stack", "aria-label": "New project" },
        field({ label: "Name", name: "name", control: input({ required: true, maxlength: 100 }) }),
        field({ label: "Description", name: "description", control: textarea() }),
        field({ label: "Visibility", name: "visibility", control: select(visibilities, "private") }),
        field({ label: "Team", name: "team_id", control: teamSelect, hint: "Needed for team visibility." }),
        h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Create project"))
      ),
      async (form) => {
        const teamId = formValue(form, "team_id")
        const project = await api
          .POST("/v1/projects", {
            body: {
              name: formValue(form, "name"),
              description: formValue(form, "description"),
              visibility: visibilityOf(formValue(form, "visibility")),
              ...(teamId === "" ? {} : { team_id: teamId })
            }
          })
          .then(dataOf)
        flashNext(`Project “${project.name}” created.`)
        navigate(`${BASE}/projects/${encodeURIComponent(project.id)}`)
      }
    )
  )
  api
    .GET("/v1/teams", { params: { query: { per_page: 100, sort: "name", order: "asc" } } })
    .then(bodyOf)
    .then(
      (teams) => teamSelect.append(...teams.data.map((team) => h("option", { value: team.id }, team.name))),
      () => {}
    )

  const filters = filterForm(
    context,
    "Filter projects",
    [
      field({
        label: "Search",
        name: "search",
        control: input({ type: "search", value: q("search"), placeholder: "Name or description" })
      }),
      field({
        label: "Status",
        name: "status",
        control: select(
          [
            ["", "Any"],
            ["active", "Active"],
            ["archived", "Archived"]
          ],
          q("status")
        )
      }),
      field({
        label: "Sort by",
        name: "sort",
        control: select(
          [
            ["created_at", "Created"],
            ["updated_at", "Updated"],
            ["name", "Name"]
          ],
          q("sort") || "created_at"
        )
      }),
      field({
        label: "Order",
        name: "order",
        control: select(
          [
            ["desc", "Descending"],
            ["asc", "Ascending"]
          ],
          q("order") || "desc"
        )
      })
    ],
    ["search", "status", "sort", "order"]
  )

  const projects = listRegion<Project>({
    caption: "Projects",
    columns: [
      { label: "Name", cell: projectLink },
      { label: "Status", cell: (project) => badge(project.status) },
      { label: "Visibility", cell: (project) => project.visibility },
      { label: "Updated", cell: (project) => when(project.updated_at) }
    ],
    empty:
      q("search") !== "" || q("status") !== ""
        ? "No project matches these filters."
        : "No projects yet. Create one above.",
    fetch: () =>
      api
        .GET("/v1/projects", {
          params: {
            query: {
              page: pageParam(q("page")),
              per_page: 20,
              search: q("search") || undefined,
              status: oneOf(["active", "archived"], q("status")),
              sort: oneOf(["created_at", "updated_at", "name"], q("sort")),
              order: oneOf(["asc", "desc"], q("order"))
            }
          }
        })
        .then(bodyOf),
    pageHref: (n) => context.href({ page: n })
  })
  context.root.append(create, filters, projects.element)
  await projects.load()
}

/**
 * Who and what a project's page names: the signed-in user, the project's team (read once: its name and the caller's
 * role in it) and its owner by name. A project the caller can see is theirs or their team's (decisions.md
 * "Resources"), so the owner is the caller or, for a team project, found among the team's members; an owner who has
 * left the team is said so. Failed reads leave a part unknown.
 */
interface ProjectPeople {
  readonly me: User | undefined
  readonly team: Team | undefined
  readonly ownerName: string | undefined
}

const MEMBER_PAGES = 10

const projectPeople = async (project: Project): Promise<ProjectPeople> => {
  const me = await api
    .GET("/v1/users/me")
    .then(dataOf)
    .catch(() => undefined)
  const teamId = project.team_id
  const team =
    teamId === null
      ? undefined
      : await api
          .GET("/v1/teams/{team_id}", { params: { path: { team_id: teamId } } })
          .then(dataOf)
          .catch(() => undefined)
  if (me !== undefined && me.id === project.owner_id) return { me, team, ownerName: `${me.name} (you)` }
  if (teamId === null || team === undefined) return { me, team, ownerName: undefined }
  for (let page = 1; page <= MEMBER_PAGES; page++) {
    const members = await api
      .GET("/v1/teams/{team_id}/members", { params: { path: { team_id: teamId }, query: { page, per_page: 100 } } })
      .then(bodyOf)
      .catch(() => undefined)
    if (members === undefined) return { me, team, ownerName: undefined }
    const owner = members.data.find((member) => member.user_id === project.owner_id)
    if (owner !== undefined) return { me, team, ownerName: owner.name }
    if (members.data.length === 0 || page * members.meta.per_page >= members.meta.total)
      return { me, team, ownerName: `Someone no longer in ${team.name}` }
  }
  return { me, team, ownerName: undefined }
}

/**
 * Whether the signed-in user may archive, unarchive, change the visibility of and delete `project`: its owner may,
 * and for a team project the team's owners and admins (decisions.md "Who may do what to a team's projects"); the
 * team's read answers the caller's role. Unknown (a failed read) counts as no: the service decides anyway.
 */
const managesProject = (project: Project, people: ProjectPeople): boolean => {
  if (people.me !== undefined && people.me.id === project.owner_id) return true
  if (project.visibility !== "team" || project.team_id === null) return true
  return people.team?.role === "owner" || people.team?.role === "admin"
}

export const projectPage = async (context: PageContext): Promise<void> => {
  const id = context.params[0] ?? ""
  const byId = { params: { path: { id } } }
  /** `byId` with the `If-Match` of the version the page was drawn from. */
  const ifUnchanged = () => ({ params: { path: { id }, header: { "If-Match": etag } } })
  const tagged = await readTaggedRecord(context, {
    read: () => api.GET("/v1/projects/{id}", byId).then(taggedOf),
    back: [`${BASE}/projects`, "← Projects"],
    label: "Project"
  })
  if (tagged === undefined) return
  const project = tagged.data
  // Every change is sent with the ETag the page was drawn from, so it never overwrites someone else's change.
  let etag = tagged.etag
  /** A button's change was refused because the project changed meanwhile: the page again, with the current version. */
  const changedMeanwhile = reloadWhenChangedMeanwhile(context, "project", "nothing was changed")
  context.title(project.name, badge(project.status))
  const people = await projectPeople(project)
  const manages = managesProject(project, people)

  const actions = h("div", { class: "actions" })
  if (manages) {
    actions.append(
      actionButton(project.status === "active" ? "Archive" : "Unarchive", async () => {
        const status = project.status === "active" ? "archived" : "active"
        const changed = await api
          .PUT("/v1/projects/{id}", { ...ifUnchanged(), body: { status } })
          .then(() => true, changedMeanwhile)
        if (!changed) return
        flashNext(status === "archived" ? "Project archived." : "Project restored to active.")
        context.refresh()
      }),
      actionButton(
        "Delete project",
        async () => {
          if (
            !(await confirmAction(
              `Delete “${project.name}” and its deployments for good? This cannot be undone.`,
              "Delete project"
            ))
          )
            return
          const deleted = await api.DELETE("/v1/projects/{id}", ifUnchanged()).then(() => true, changedMeanwhile)
          if (!deleted) return
          flashNext(`Project “${project.name}” deleted.`)
          navigate(`${BASE}/projects`)
        },
        { className: "danger" }
      )
    )
  } else {
    actions.append(
      h(
        "p",
        { class: "muted" },
        "Archiving, changing the visibility and deleting this team project need the team role admin or owner."
      )
    )
  }

  const details = h(
    "dl",
    { class: "facts" },
    h("dt", null, "ID"),
    h("dd", null, copyableId("project", project.id)),
    h("dt", null, "Owner"),
    h("dd", null, people.ownerName ?? h("span", { class: "muted" }, "Unknown")),
    h("dt", null, "Visibility"),
    h("dd", null, project.visibility),
    h("dt", null, "Team"),
    h(
      "dd",
      null,
      project.team_id === null
        ? "—"
        : h(
            "a",
            { href: `${BASE}/teams/${encodeURIComponent(project.team_id)}` },
            people.team?.name ?? "The project's team"
          )
    ),
    h("dt", null, "Created"),
    h("dd", null, when(project.created_at)),
    h("dt", null, "Updated"),
    h("dd", null, when(project.updated_at))
  )

  const edit = h(
    "details",
    { class: "card" },
    h("summary", null, "Edit project"),
    onSubmit(
      h(
        "form",
        { class: "stack", "aria-label": "Edit project" },
        field({ label: "Name", name: "name", control: input({ value: project.name, required: true, maxlength: 100 }) }),
        field({ label: "Description", name: "description", control: textarea(project.description) }),
        manages
          ? field({ label: "Visibility", name: "visibility", control: select(visibilities, project.visibility) })
          : null,
        h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Save changes"))
      ),
      async (form) => {
        const saved = await api
          .PUT("/v1/projects/{id}", {
            ...ifUnchanged(),
            body: {
              name: formValue(form, "name"),
              description: formValue(form, "description"),
              ...(manages ? { visibility: visibilityOf(formValue(form, "visibility")) } : {})
            }
          })
          .then(
            () => true,
            showWhenChangedMeanwhile(
              form,
              "project",
              () => api.GET("/v1/projects/{id}", byId).then(taggedOf),
              (current) => [
                ["Name", current.name],
                ["Description", current.description === "" ? "—" : current.description],
                ["Visibility", current.visibility],
                ["Status", current.status],
                ["Updated", when(current.updated_at)]
              ],
              (tag) => {
                etag = tag
              }
            )
          )
        if (!saved) return
        flashNext("Project saved.")
        context.refresh()
      }
    )
  )

  context.root.append(
    project.description === ""
      ? h("p", { class: "muted" }, "No description.")
      : h("p", { class: "description" }, project.description),
    details,
    actions,
    edit,
    deploymentsSection(context, project)
  )
}

const deploymentsSection = (context: PageContext, project: Project): HTMLElement => {
  const { q } = context

  const finish = (deployment: Deployment) =>
    h(
      "div",
      { class: "row-actions" },
      actionButton("Succeeded", () => finishAs(deployment, "succeeded"), {
        ariaLabel: `Mark ${deployment.ref} succeeded`
      }),
      actionButton("Failed", () => finishAs(deployment, "failed"), {
        ariaLabel: `Mark ${deployment.ref} failed`,
        className: "danger"
      })
    )
  /**
   * Finishes `deployment` as the row shows it (`If-Match`): when someone else changed it meanwhile (finished it),
   * nothing is changed, and the list shows its current version with the reason.
   */
  const finishAs = async (deployment: Deployment, status: "succeeded" | "failed") => {
    const path = { id: project.id, deployment_id: deployment.id }
    const read = () => api.GET("/v1/projects/{id}/deployments/{deployment_id}", { params: { path } }).then(taggedOf)
    const what = `${deployment.ref} to ${deployment.environment}`
    const refused = await tagOfShown(deployment, read)
      .then((etag) =>
        api.PUT("/v1/projects/{id}/deployments/{deployment_id}", {
          params: { path, header: { "If-Match": etag } },
          body: { status }
        })
      )
      .then(
        () => undefined,
        async (error: unknown) => {
          if (!isChangedMeanwhile(error)) throw error
          // Someone else finished it first: its current version, in the list below and in the reason.
          return (await read()).data
        }
      )
    await deployments.load()
    announce(
      refused === undefined
        ? `Deployment of ${what} marked ${status}.`
        : `Someone else changed the deployment of ${what} meanwhile, so it was not marked ${status}. Its status now: ${refused.status}.`
    )
  }

  const deployments = listRegion<Deployment>({
    caption: "Deployments",
    loading: "Loading deployments…",
    columns: [
      { label: "Ref", cell: (d) => h("code", null, d.ref) },
      { label: "Environment", cell: (d) => d.environment },
      { label: "Status", cell: (d) => badge(d.status) },
      { label: "Started", cell: (d) => when(d.created_at) },
      { label: "Finished", cell: (d) => when(d.finished_at) },
      { label: "Description", cell: (d) => d.description || h("span", { class: "muted" }, "—") },
      { label: "Finish", cell: (d) => (d.status === "running" ? finish(d) : h("span", { class: "muted" }, "—")) }
    ],
    empty: "No deployments yet.",
    fetch: () =>
      api
        .GET("/v1/projects/{id}/deployments", {
          params: {
            path: { id: project.id },
            query: {
              page: pageParam(q("dpage")),
              per_page: 20,
              status: oneOf(["running", "succeeded", "failed"], q("dstatus")),
              environment: q("denv") || undefined
            }
          }
        })
        .then(bodyOf),
    pageHref: (n) => context.href({ dpage: n })
  })

  const create = onSubmit(
    h(
      "form",
      { class: "stack", "aria-label": "New deployment" },
      project.status === "archived"
        ? h("p", { class: "muted" }, "Archived projects cannot be deployed; unarchive it first.")
        : null,
      field({
        label: "Environment",
        name: "environment",
        control: input({ value: "production", maxlength: 64 }),
        hint: "Lower-case letters, digits, “_”, “.” and “-”."
      }),
      field({
        label: "Ref",
        name: "ref",
        control: input({ required: true, maxlength: 200, placeholder: "main, v1.2.0 or a commit" })
      }),
      field({ label: "Description", name: "description", control: input({ maxlength: 2000 }) }),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Start deployment"))
    ),
    async (form) => {
      const started = dataOf(
        await api.POST("/v1/projects/{id}/deployments", {
          params: { path: { id: project.id } },
          body: {
            environment: formValue(form, "environment"),
            ref: formValue(form, "ref"),
            description: formValue(form, "description")
          }
        })
      )
      closeForm(form)
      await deployments.load()
      announce(`Deployment of ${started.ref} to ${started.environment} started.`)
    }
  )

  const filters = filterForm(
    context,
    "Filter deployments",
    [
      field({
        label: "Status",
        name: "dstatus",
        control: select(
          [
            ["", "Any"],
            ["running", "Running"],
            ["succeeded", "Succeeded"],
            ["failed", "Failed"]
          ],
          q("dstatus")
        )
      }),
      field({ label: "Environment", name: "denv", control: input({ value: q("denv"), placeholder: "production" }) })
    ],
    ["dstatus", "denv"],
    "dpage"
  )

  void deployments.load()
  return h(
    "section",
    { class: "section", "aria-labelledby": "deployments-title" },
    h("h2", { id: "deployments-title" }, "Deployments"),
    h("details", { class: "card" }, h("summary", null, "Start a deployment"), create),
    filters,
    deployments.element
  )
}
