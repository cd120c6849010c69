/**
 * Events: the caller's events feed (`GET /v1/events`), newest first, filtered by type, each event's JSON as its
 * webhooks were sent it and what it is about in words (the project by name, the member, the deployment); and one
 * event's page (`/dashboard/events/<id>`), which a delivery links to, with the event's deliveries to the caller's
 * webhooks (`GET /v1/events/<id>/deliveries`) and a "Resend to this webhook" action on each.
 */
import { api, bodyOf, dataOf, pageOf, pageParam } from "../api.ts"
import { h } from "../dom.ts"
import { BASE, navigate, type PageContext } from "../router.ts"
import { type EventDelivery, type EventRecord, eventTypes } from "../types.ts"
import {
  actionButton,
  breakableUrl,
  checkboxes,
  checkedValues,
  errorBox,
  listRegion,
  pager,
  readRecord,
  when
} from "../ui.ts"
import { deliveryHref, hookHref, manualOutcome, retryAndWait, statusCell } from "./webhooks.ts"

export const eventHref = (id: string): string => `${BASE}/events/${encodeURIComponent(id)}`

/** The event as delivered, indented for reading (the delivered body itself is the same JSON on one line). */
const json = (event: EventRecord): HTMLElement =>
  h(
    "pre",
    { class: "event-json", tabindex: 0, "aria-label": `JSON of event ${event.id}` },
    JSON.stringify(event, null, 2)
  )

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A string field of an event's data, if it has one. */
const text = (data: unknown, name: string): string | undefined => {
  if (!isRecord(data)) return undefined
  const value = data[name]
  return typeof value === "string" ? value : undefined
}

/** Names of the projects and teams the events of a page are about, by id (those the caller can still read). */
type Names = ReadonlyMap<string, string>

/**
 * The names an event's data does not carry: a deployment's project, a member's team. Read once per id on the page
 * (a project or team deleted since, or no longer the caller's, keeps its id).
 */
const namesFor = async (events: ReadonlyArray<EventRecord>): Promise<Names> => {
  const projects = new Set<string>()
  const teams = new Set<string>()
  for (const event of events) {
    const project = text(event.data, "project_id")
    const team = text(event.data, "team_id")
    if (event.type.startsWith("deployment.") && project !== undefined) projects.add(project)
    if (event.type.startsWith("member.") && team !== undefined) teams.add(team)
  }
  const named = (read: Promise<{ readonly id: string; readonly name: string }>) =>
    read.then(
      (found): readonly [string, string] | undefined => [found.id, found.name],
      () => undefined
    )
  const found = await Promise.all([
    ...Array.from(projects, (id) => named(api.GET("/v1/projects/{id}", { params: { path: { id } } }).then(dataOf))),
    ...Array.from(teams, (id) =>
      named(api.GET("/v1/teams/{team_id}", { params: { path: { team_id: id } } }).then(dataOf))
    )
  ])
  return new Map(found.filter((entry) => entry !== undefined))
}

/**
 * What an event is about, in words: the project by name, the member by email and role (and team), the deployment
 * by environment and ref (and project); nothing for data it does not know.
 */
export const subjectOf = (event: EventRecord, names: Names): string | undefined => {
  const data = event.data
  const nameOf = (field: string) => {
    const id = text(data, field)
    return id === undefined ? undefined : (names.get(id) ?? id)
  }
  if (event.type.startsWith("project.")) return text(data, "name")
  if (event.type.startsWith("member.")) {
    const who = text(data, "email") ?? text(data, "user_id")
    const role = text(data, "role")
    const team = nameOf("team_id")
    if (who === undefined) return undefined
    return `${who}${role === undefined ? "" : ` (${role})`}${team === undefined ? "" : ` in ${team}`}`
  }
  if (event.type.startsWith("deployment.")) {
    const environment = text(data, "environment")
    const ref = text(data, "ref")
    const project = nameOf("project_id")
    const what = environment === undefined ? "Deployment" : `${environment}${ref === undefined ? "" : ` @ ${ref}`}`
    return project === undefined ? what : `${what} of ${project}`
  }
  return text(data, "name")
}

const eventCard = (event: EventRecord, names: Names): HTMLElement => {
  const subject = subjectOf(event, names)
  return h(
    "li",
    { class: "card event" },
    h(
      "div",
      { class: "event-head" },
      h("a", { href: eventHref(event.id), class: "event-type" }, event.type),
      subject === undefined ? null : h("span", { class: "event-subject" }, subject),
      h("span", { class: "muted" }, when(event.created_at, { milliseconds: true }))
    ),
    h("details", null, h("summary", { class: "event-summary" }, h("code", null, event.id)), json(event))
  )
}

export const eventsPage = async (context: PageContext): Promise<void> => {
  const { q } = context
  const types = q("type") === "" ? [] : q("type").split(",")
  context.title("Events")
  context.root.append(
    h(
      "p",
      { class: "muted" },
      "Every event you were told about when it happened — as owner of the project, as an owner or admin of its " +
        "team, or as the member who joined or left — whether or not you had a webhook then. Each is shown as its " +
        "webhooks were sent it."
    )
  )

  const filters = h(
    "form",
    { class: "filters", role: "search", "aria-label": "Filter events" },
    checkboxes({
      legend: "Types",
      name: "type",
      values: eventTypes,
      checked: types,
      hint: "None checked: every type."
    }),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Apply"))
  )
  filters.addEventListener("submit", (event) => {
    event.preventDefault()
    navigate(context.href({ type: checkedValues(filters, "type").join(",") || undefined, page: undefined }))
  })

  const list = h("div", { class: "list", "aria-live": "polite" }, h("p", { class: "loading" }, "Loading events…"))
  context.root.append(filters, list)
  try {
    const page = await api
      .GET("/v1/events", {
        params: { query: { page: pageParam(q("page")), per_page: 20, type: q("type") || undefined } }
      })
      .then(pageOf)
    const names = await namesFor(page.data)
    list.replaceChildren(
      page.data.length === 0
        ? h("p", { class: "empty" }, types.length === 0 ? "No events yet." : "No events of these types.")
        : h(
            "ol",
            { class: "event-list", "aria-label": "Events, newest first" },
            page.data.map((event) => eventCard(event, names))
          ),
      pager(page.meta, (n) => context.href({ page: n })) ?? ""
    )
  } catch (error) {
    list.replaceChildren(errorBox(error))
  }
}

export const eventPage = async (context: PageContext): Promise<void> => {
  const { q } = context
  const id = context.params[0] ?? ""
  const event = await readRecord(context, {
    read: () => api.GET("/v1/events/{id}", { params: { path: { id } } }).then(dataOf),
    back: [`${BASE}/events`, "← Events"],
    label: "Event"
  })
  if (event === undefined) return
  context.title(event.type)
  const subject = subjectOf(event, await namesFor([event]))
  const notice = h("p", { class: "flash", role: "status", hidden: true })

  const deliveries = listRegion<EventDelivery>({
    caption: "Deliveries of this event",
    loading: "Loading deliveries…",
    empty: "This event was not delivered to any of your webhooks.",
    fetch: () =>
      api
        .GET("/v1/events/{event_id}/deliveries", {
          params: { path: { event_id: id }, query: { page: pageParam(q("page")), per_page: 20 } }
        })
        .then(bodyOf),
    pageHref: (n) => context.href({ page: n }),
    columns: [
      {
        label: "Webhook",
        cell: (d) => h("a", { href: hookHref(d.webhook_id), class: "url" }, breakableUrl(d.webhook_url))
      },
      { label: "Status", cell: statusCell },
      {
        label: "Last code",
        cell: (d) => (d.last_status_code === null ? h("span", { class: "muted" }, "—") : String(d.last_status_code))
      },
      { label: "Attempts", cell: (d) => String(d.attempt_count) },
      { label: "Last attempt", cell: (d) => when(d.last_attempt_at) },
      {
        label: "Actions",
        cell: (d) => {
          const resend = actionButton(
            "Resend to this webhook",
            async () => {
              notice.hidden = false
              notice.textContent = `Sending to ${d.webhook_url}…`
              const { attempt } = await retryAndWait(d.webhook_id, d.id)
              notice.textContent = `${d.webhook_url}: ${manualOutcome(attempt)}`
              await deliveries.load()
              // The list was drawn again: focus goes back to this delivery's Resend button, where it came from.
              deliveries.element.querySelector<HTMLElement>(`[data-resend="${CSS.escape(d.id)}"]`)?.focus()
            },
            { ariaLabel: `Resend to this webhook: ${d.webhook_url}` }
          )
          resend.dataset.resend = d.id
          return h(
            "div",
            { class: "row-actions" },
            h(
              "a",
              { href: deliveryHref(d.webhook_id, d.id), "aria-label": `Delivery to ${d.webhook_url}` },
              "Delivery"
            ),
            resend
          )
        }
      }
    ]
  })

  context.root.append(
    h(
      "dl",
      { class: "facts" },
      h("dt", null, "Event"),
      h("dd", null, h("code", null, event.id)),
      h("dt", null, "Type"),
      h("dd", null, event.type),
      ...(subject === undefined ? [] : [h("dt", null, "About"), h("dd", null, subject)]),
      h("dt", null, "Created"),
      h("dd", null, when(event.created_at, { milliseconds: true }))
    ),
    h(
      "section",
      { class: "section", "aria-labelledby": "event-deliveries-title" },
      h("h2", { id: "event-deliveries-title" }, "Deliveries to your webhooks"),
      notice,
      deliveries.element
    ),
    h("h2", null, "As delivered"),
    json(event)
  )
  await deliveries.load()
}
