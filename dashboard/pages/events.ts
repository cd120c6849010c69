/**
 * Events: the caller's events feed (`GET /v1/events`), newest first, filtered by type, each event's JSON as its
 * webhooks were sent it; and one event's page (`/dashboard/events/<id>`), which a delivery links to.
 */
import { api, dataOf, pageOf, pageParam } from "../api.ts"
import { h } from "../dom.ts"
import { BASE, navigate, type PageContext } from "../router.ts"
import { type EventRecord, eventTypes } from "../types.ts"
import { checkboxes, checkedValues, errorBox, pager, readRecord, when } from "../ui.ts"

export const eventHref = (id: string): string => `${BASE}/events/${encodeURIComponent(id)}`

/** The event as delivered, indented for reading (the delivered body itself is the same JSON on one line). */
const json = (event: EventRecord): HTMLElement =>
  h(
    "pre",
    { class: "event-json", tabindex: 0, "aria-label": `JSON of event ${event.id}` },
    JSON.stringify(event, null, 2)
  )

const eventCard = (event: EventRecord): HTMLElement =>
  h(
    "li",
    { class: "card event" },
    h(
      "div",
      { class: "event-head" },
      h("a", { href: eventHref(event.id), class: "event-type" }, event.type),
      h("span", { class: "muted" }, when(event.created_at, { milliseconds: true }))
    ),
    h("details", null, h("summary", { class: "event-summary" }, h("code", null, event.id)), json(event))
  )

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
    list.replaceChildren(
      page.data.length === 0
        ? h("p", { class: "empty" }, types.length === 0 ? "No events yet." : "No events of these types.")
        : h("ol", { class: "event-list", "aria-label": "Events, newest first" }, page.data.map(eventCard)),
      pager(page.meta, (n) => context.href({ page: n })) ?? ""
    )
  } catch (error) {
    list.replaceChildren(errorBox(error))
  }
}

export const eventPage = async (context: PageContext): Promise<void> => {
  const id = context.params[0] ?? ""
  const event = await readRecord(context, {
    read: () => api.GET("/v1/events/{id}", { params: { path: { id } } }).then(dataOf),
    back: [`${BASE}/events`, "← Events"],
    label: "Event"
  })
  if (event === undefined) return
  context.title(event.type)
  context.root.append(
    h(
      "dl",
      { class: "facts" },
      h("dt", null, "Event"),
      h("dd", null, h("code", null, event.id)),
      h("dt", null, "Type"),
      h("dd", null, event.type),
      h("dt", null, "Created"),
      h("dd", null, when(event.created_at, { milliseconds: true }))
    ),
    h("h2", null, "As delivered"),
    json(event)
  )
}
