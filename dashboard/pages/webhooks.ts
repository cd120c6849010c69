/**
 * Webhooks: the list, registering one (URL, event checkboxes, optional secret), a webhook's page (send a test
 * event, rotate the secret with an overlap, recover failed deliveries, edit, re-activate, delete, its delivery log
 * filtered by status, event type and date, refreshed while a delivery is in flight) and a delivery's page (each
 * attempt's request beside its response, Redeliver, refreshed while in flight).
 */
import { api } from "../api.ts"
import { h, replace } from "../dom.ts"
import { BASE, flashNext, navigate, type PageContext } from "../router.ts"
import {
  type Attempt,
  type CreatedWebhook,
  type Delivery,
  type DeliveryWithAttempts,
  eventTypes,
  type RotatedWebhook,
  TEST_EVENT,
  type Webhook
} from "../types.ts"
import {
  actionButton,
  badge,
  breakableUrl,
  checkboxes,
  checkedValues,
  confirmAction,
  field,
  formValue,
  input,
  listRegion,
  onSubmit,
  readRecord,
  secretOnce,
  select,
  table,
  when
} from "../ui.ts"
import { filterForm } from "./projects.ts"

const hookHref = (id: string) => `${BASE}/webhooks/${encodeURIComponent(id)}`
const deliveryHref = (hookId: string, id: string) => `${hookHref(hookId)}/deliveries/${encodeURIComponent(id)}`

export const webhooksPage = async (context: PageContext): Promise<void> => {
  const { q } = context
  context.title("Webhooks")
  context.root.append(
    h(
      "p",
      { class: "muted" },
      "The service POSTs each event you subscribe to, signed with ",
      h("code", null, "webhook-signature"),
      " (Standard Webhooks: the event id and a timestamp with the body) and ",
      h("code", null, "X-Service-Signature: sha256=…"),
      ". A delivery is tried 5 times; after the fifth failure it is failed, and so is the webhook until a delivery succeeds."
    )
  )
  const created = h("div", { class: "created-slot" })
  const hooks = listRegion<Webhook>({
    caption: "Webhooks",
    columns: [
      { label: "URL", cell: (hook) => h("a", { href: hookHref(hook.id), class: "url" }, breakableUrl(hook.url)) },
      { label: "Events", cell: (hook) => h("span", { class: "scopes" }, hook.events.join(", ")) },
      { label: "Status", cell: (hook) => badge(hook.status) },
      { label: "Created", cell: (hook) => when(hook.created_at) }
    ],
    empty: "No webhooks yet.",
    fetch: () =>
      api.list<Webhook>("/webhooks", {
        page: q("page") || undefined,
        per_page: 20,
        status: q("status") || undefined
      }),
    pageHref: (n) => context.href({ page: n })
  })

  const form = onSubmit(
    h(
      "form",
      { class: "stack", "aria-label": "Register a webhook" },
      field({
        label: "Payload URL",
        name: "url",
        control: input({ type: "url", required: true, placeholder: "https://example.com/hooks/pcs" })
      }),
      checkboxes({ legend: "Events", name: "events", values: eventTypes }),
      field({
        label: "Secret (optional)",
        name: "secret",
        control: input({ type: "text", autocomplete: "off", spellcheck: "false", minlength: 16 }),
        hint: "16–256 characters, a new random one (never a password). Leave empty and the service makes one, shown once."
      }),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Register webhook"))
    ),
    async (form) => {
      const secret = formValue(form, "secret")
      const hook = await api.post<CreatedWebhook>("/webhooks", {
        url: formValue(form, "url"),
        events: checkedValues(form, "events"),
        ...(secret === "" ? {} : { secret })
      })
      form.reset()
      form.closest("details")?.removeAttribute("open")
      created.replaceChildren(
        hook.secret === undefined
          ? h("p", { class: "flash", role: "status" }, `Webhook for ${hook.url} registered.`)
          : secretOnce({ title: `Webhook for ${hook.url} registered`, label: "Its signing secret", value: hook.secret })
      )
      await hooks.load()
    }
  )

  const filters = filterForm(
    context,
    "Filter webhooks",
    [
      field({
        label: "Status",
        name: "status",
        control: select(
          [
            ["", "Any"],
            ["active", "Active"],
            ["failed", "Failed"]
          ],
          q("status")
        )
      })
    ],
    ["status"]
  )

  context.root.append(
    created,
    h("details", { class: "card create" }, h("summary", null, "Register a webhook"), form),
    filters,
    hooks.element
  )
  await hooks.load()
}

const eventHref = (eventId: string) => `${BASE}/events/${encodeURIComponent(eventId)}`

/** How often a page with a delivery in flight asks again. */
const REFRESH_MS = 2000
/** Attempts a delivery gets before it fails: the first and four retries (WEBHOOK_RETRY_DELAYS has four waits). */
const ATTEMPTS = 5

const clockFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", timeZoneName: "short" })
// `dateStyle` cannot be combined with `timeZoneName`: the parts are named one by one.
const dateTimeFormat = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  timeZoneName: "short"
})

/** A time of day with its time zone (`12:05 CET`), the date too when it is not today. */
const clock = (iso: string): string => {
  const date = new Date(iso)
  return date.toDateString() === new Date().toDateString() ? clockFormat.format(date) : dateTimeFormat.format(date)
}

/** Where a delivery stands, in words: "retrying: attempt 3 of 5 failed, next at 12:05 CET" rather than "pending". */
export const progress = (d: Delivery): string => {
  if (d.status !== "pending") return d.status
  const due = d.next_attempt_at === null ? "" : ` at ${clock(d.next_attempt_at)}`
  if (d.attempt_count === 0) return `pending: first attempt due${due}`
  const lastOk = d.last_status_code !== null && d.last_status_code >= 200 && d.last_status_code < 300
  if (lastOk || d.attempt_count >= ATTEMPTS) return `redelivery due${due} (attempt ${d.attempt_count + 1})`
  return `retrying: attempt ${d.attempt_count} of ${ATTEMPTS} failed, next${due}`
}

/** The status badge, with the words above beside it while a delivery is pending. */
const statusCell = (d: Delivery) =>
  d.status === "pending" ? h("span", { class: "progress" }, badge("pending"), " ", progress(d)) : badge(d.status)

/** A `datetime-local` value (the reader's zone) `hoursAgo` hours back. */
const localInputValue = (hoursAgo: number): string => {
  const date = new Date(Date.now() - hoursAgo * 3600_000)
  const pad = (n: number) => String(n).padStart(2, "0")
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`
}

/** A `datetime-local` value (read in the reader's zone) as an ISO instant; "" stays "". */
const instantOf = (local: string): string => (local === "" ? "" : new Date(local).toISOString())

/**
 * A refresher: once started, calls `again` every REFRESH_MS while `inFlight()` holds and `anchor` is on the page
 * (leaving the page stops it). Starting it while it runs does nothing, so there is never more than one loop.
 */
const refresher = (anchor: Element, inFlight: () => boolean, again: () => Promise<void>): (() => void) => {
  let running = false
  const tick = () => {
    if (!anchor.isConnected || !inFlight()) {
      running = false
      return
    }
    setTimeout(() => {
      if (!anchor.isConnected) {
        running = false
        return
      }
      again().finally(tick)
    }, REFRESH_MS)
  }
  return () => {
    if (running) return
    running = true
    tick()
  }
}

export const webhookPage = async (context: PageContext): Promise<void> => {
  const { q } = context
  const id = context.params[0] ?? ""
  const path = `/webhooks/${encodeURIComponent(id)}`
  const hook = await readRecord<Webhook>(context, { path, back: [`${BASE}/webhooks`, "← Webhooks"], label: "Webhook" })
  if (hook === undefined) return
  context.title("Webhook", badge(hook.status))
  const secretSlot = h("div", { class: "created-slot" })
  const notice = h("p", { class: "flash", role: "status", hidden: true })
  const say = (...text: Array<Node | string>) => {
    notice.hidden = false
    notice.replaceChildren(...text)
  }

  let pendingShown = false
  const deliveries = listRegion<Delivery>({
    caption: "Deliveries",
    loading: "Loading deliveries…",
    fetch: async () => {
      const page = await api.list<Delivery>(`${path}/deliveries`, {
        page: q("page") || undefined,
        per_page: 20,
        status: q("status") || undefined,
        event_type: q("event_type") || undefined,
        created_after: q("created_after") || undefined,
        created_before: q("created_before") || undefined
      })
      pendingShown = page.data.some((d) => d.status === "pending")
      return page
    },
    pageHref: (n) => context.href({ page: n }),
    empty:
      q("event_type") !== "" || q("created_after") !== "" || q("created_before") !== ""
        ? "No deliveries match these filters."
        : q("status") === ""
          ? "No deliveries yet."
          : `No ${q("status")} deliveries.`,
    columns: [
      { label: "Event", cell: (d) => h("a", { href: deliveryHref(hook.id, d.id) }, d.event_type) },
      { label: "Status", cell: statusCell },
      {
        label: "Last code",
        cell: (d) => (d.last_status_code === null ? h("span", { class: "muted" }, "—") : String(d.last_status_code))
      },
      { label: "Attempts", cell: (d) => String(d.attempt_count) },
      { label: "Last attempt", cell: (d) => when(d.last_attempt_at) },
      { label: "Created", cell: (d) => when(d.created_at) },
      {
        label: "Actions",
        cell: (d) =>
          h(
            "div",
            { class: "row-actions" },
            h("a", { href: deliveryHref(hook.id, d.id), "aria-label": `Attempts of delivery ${d.id}` }, "Attempts"),
            d.status === "failed"
              ? actionButton(
                  "Retry",
                  async () => {
                    await retryAndWait(path, d.id)
                    await deliveries.load()
                  },
                  { ariaLabel: `Retry delivery ${d.id}` }
                )
              : null
          )
      }
    ]
  })
  const refreshList = refresher(deliveries.element, () => pendingShown, deliveries.load)
  /** Loads the list, and keeps loading it while a delivery shown is in flight. */
  const watchDeliveries = async () => {
    await deliveries.load()
    refreshList()
  }

  const recoverForm = onSubmit(
    h(
      "form",
      { class: "stack", "aria-label": "Recover failed deliveries" },
      h(
        "p",
        { class: "hint" },
        "Each failed delivery of an event created in this window gets one new attempt now (at most 14 days back)."
      ),
      field({
        label: "Since",
        name: "since",
        control: input({ type: "datetime-local", required: true, value: localInputValue(24) }),
        hint: `Your time zone (${Intl.DateTimeFormat().resolvedOptions().timeZone}).`
      }),
      field({ label: "Until (optional, default now)", name: "until", control: input({ type: "datetime-local" }) }),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Recover deliveries"))
    ),
    async (form) => {
      const until = instantOf(formValue(form, "until"))
      const { queued } = await api.post<{ queued: number }>(`${path}/recover`, {
        since: instantOf(formValue(form, "since")),
        ...(until === "" ? {} : { until })
      })
      say(
        queued === 0
          ? "No failed delivery in that window to recover."
          : `Queued ${queued} failed ${queued === 1 ? "delivery" : "deliveries"} for a new attempt.`
      )
      form.closest("details")?.removeAttribute("open")
      await watchDeliveries()
    }
  )

  const actions = h(
    "div",
    { class: "actions" },
    actionButton(
      "Send test event",
      async () => {
        const delivery = await api.post<Delivery>(`${path}/test`, {})
        say(
          `Test event sent (${TEST_EVENT}). `,
          h("a", { href: deliveryHref(hook.id, delivery.id) }, "See its delivery")
        )
        await watchDeliveries()
      },
      { className: "primary" }
    ),
    actionButton("Rotate secret", async () => {
      if (
        !(await confirmAction(
          "Make a new signing secret? Deliveries are signed with it from now on; the current one still verifies webhook-signature for a while (X-Service-Signature uses the new one at once).",
          "Rotate secret"
        ))
      )
        return
      const rotated = await api.post<RotatedWebhook>(`${path}/rotate-secret`, {})
      secretSlot.replaceChildren(
        rotated.secret === undefined
          ? h("p", { class: "flash", role: "status" }, "Secret rotated.")
          : secretOnce({ title: "Secret rotated", label: "The new signing secret", value: rotated.secret }),
        h(
          "p",
          { class: "overlap", role: "status" },
          "The previous secret still verifies (the second ",
          h("code", null, "webhook-signature"),
          " entry) until ",
          h("strong", null, dateTimeFormat.format(new Date(rotated.previous_secret_expires_at))),
          ". Put the new one in your receiver before then."
        )
      )
    }),
    hook.status === "failed"
      ? actionButton("Set active again", async () => {
          await api.put<Webhook>(path, { status: "active" })
          flashNext("Webhook set active.")
          context.refresh()
        })
      : null,
    actionButton(
      "Delete webhook",
      async () => {
        if (!(await confirmAction(`Delete the webhook for ${hook.url} and its delivery log?`, "Delete webhook"))) return
        await api.delete(path)
        flashNext("Webhook deleted.")
        navigate(`${BASE}/webhooks`)
      },
      { className: "danger" }
    )
  )

  const edit = h(
    "details",
    { class: "card" },
    h("summary", null, "Edit webhook"),
    onSubmit(
      h(
        "form",
        { class: "stack", "aria-label": "Edit webhook" },
        field({ label: "Payload URL", name: "url", control: input({ type: "url", value: hook.url, required: true }) }),
        checkboxes({ legend: "Events", name: "events", values: eventTypes, checked: hook.events }),
        h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Save changes"))
      ),
      async (form) => {
        await api.put<Webhook>(path, { url: formValue(form, "url"), events: checkedValues(form, "events") })
        flashNext("Webhook saved.")
        context.refresh()
      }
    )
  )

  const filters = filterForm(
    context,
    "Filter deliveries",
    [
      field({
        label: "Status",
        name: "status",
        control: select(
          [
            ["", "Any"],
            ["pending", "Pending"],
            ["delivered", "Delivered"],
            ["failed", "Failed"]
          ],
          q("status")
        )
      }),
      field({
        label: "Event type",
        name: "event_type",
        control: select(
          [["", "Any"], ...[...eventTypes, TEST_EVENT].map((type): [string, string] => [type, type])],
          q("event_type")
        )
      }),
      field({
        label: "Created after",
        name: "created_after",
        control: input({ type: "date", value: q("created_after") })
      }),
      field({
        label: "Created before",
        name: "created_before",
        control: input({ type: "date", value: q("created_before") })
      })
    ],
    ["status", "event_type", "created_after", "created_before"]
  )

  context.root.append(
    h(
      "dl",
      { class: "facts" },
      h("dt", null, "URL"),
      h("dd", null, h("code", { class: "url" }, breakableUrl(hook.url))),
      h("dt", null, "Events"),
      h("dd", null, hook.events.join(", ")),
      h("dt", null, "ID"),
      h("dd", null, h("code", null, hook.id)),
      h("dt", null, "Created"),
      h("dd", null, when(hook.created_at)),
      h("dt", null, "Failed at"),
      h("dd", null, when(hook.failed_at))
    ),
    actions,
    notice,
    secretSlot,
    h("details", { class: "card" }, h("summary", null, "Recover failed deliveries since…"), recoverForm),
    edit,
    h(
      "section",
      { class: "section", "aria-labelledby": "deliveries-title" },
      h("h2", { id: "deliveries-title" }, "Deliveries"),
      filters,
      deliveries.element
    )
  )
  await watchDeliveries()
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * The manual retry: `POST …/retry` (202) schedules one immediate attempt, which the service's delivery worker
 * makes; this waits (up to 30 s) until that attempt is recorded and answers the delivery with its attempts.
 */
const retryAndWait = async (hookPath: string, deliveryId: string): Promise<DeliveryWithAttempts> => {
  const deliveryPath = `${hookPath}/deliveries/${encodeURIComponent(deliveryId)}`
  const before = await api.get<DeliveryWithAttempts>(deliveryPath)
  await api.post<Delivery>(`${deliveryPath}/retry`)
  const deadline = Date.now() + 30_000
  for (;;) {
    const now = await api.get<DeliveryWithAttempts>(deliveryPath)
    if ((now.status !== "pending" && now.attempt_count > before.attempt_count) || Date.now() > deadline) return now
    await sleep(400)
  }
}

/** The payload as sent, indented for reading (as sent when it is not JSON). */
const pretty = (payload: string): string => {
  try {
    return JSON.stringify(JSON.parse(payload), null, 2)
  } catch {
    return payload
  }
}

/** Headers as `name: value` lines. */
const headerLines = (headers: Readonly<Record<string, string>>): string =>
  Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}`)
    .join("\n")

/** One attempt: the request sent (headers, payload) beside the response received (status, headers, body). */
const exchange = (url: string, payload: string, attempt: Attempt, open: boolean): HTMLElement =>
  h(
    "details",
    { class: "card exchange", open },
    h(
      "summary",
      null,
      `Attempt ${attempt.number}: `,
      attempt.status_code === null ? "no response" : `HTTP ${attempt.status_code}`,
      " ",
      badge(attempt.outcome)
    ),
    h(
      "div",
      { class: "exchange-sides" },
      h(
        "section",
        { class: "side", "aria-label": `Request of attempt ${attempt.number}` },
        h("h3", null, "Request"),
        h("p", null, h("code", { class: "url" }, `POST ${url}`)),
        h("h4", null, "Headers"),
        attempt.request_headers === null
          ? h("p", { class: "muted" }, "Not recorded (an attempt made before requests were recorded).")
          : h("pre", { class: "headers" }, headerLines(attempt.request_headers)),
        h("h4", null, "Payload"),
        h("pre", { class: "payload" }, pretty(payload))
      ),
      h(
        "section",
        { class: "side", "aria-label": `Response of attempt ${attempt.number}` },
        h("h3", null, "Response"),
        h(
          "p",
          null,
          attempt.status_code === null ? "No response" : `HTTP ${attempt.status_code}`,
          ` after ${attempt.duration_ms} ms`,
          attempt.error === null ? "" : ` — ${attempt.error}`
        ),
        h("h4", null, "Headers"),
        attempt.response_headers === null
          ? h("p", { class: "muted" }, "None")
          : h("pre", { class: "headers" }, headerLines(attempt.response_headers)),
        h("h4", null, "Body (first 4 KiB)"),
        attempt.response_body === null || attempt.response_body === ""
          ? h("p", { class: "muted" }, "Empty")
          : h("pre", { class: "payload" }, attempt.response_body)
      )
    )
  )

export const deliveryPage = async (context: PageContext): Promise<void> => {
  const [hookId = "", id = ""] = context.params
  const hookPath = `/webhooks/${encodeURIComponent(hookId)}`
  const path = `${hookPath}/deliveries/${encodeURIComponent(id)}`
  const delivery = await readRecord<DeliveryWithAttempts>(context, {
    path,
    back: [hookHref(hookId), "← Webhook"],
    label: "Delivery"
  })
  if (delivery === undefined) return
  // The webhook's URL, for the request line (the delivery does not carry it); without it the line says less.
  const url = await api.get<Webhook>(hookPath).then(
    (hook) => hook.url,
    () => "(the webhook's URL)"
  )
  const heading = context.title(`Delivery of ${delivery.event_type}`, badge(delivery.status))
  const status = h("p", { class: "flash", role: "status", hidden: true })
  const body = h("div")
  let current = delivery

  const show = (shown: DeliveryWithAttempts) => {
    current = shown
    heading.parentElement?.querySelector(".badge")?.replaceWith(badge(shown.status))
    const latestFirst = [...shown.attempts].reverse()
    replace(
      body,
      h(
        "dl",
        { class: "facts" },
        h("dt", null, "Status"),
        h("dd", { class: "delivery-progress" }, progress(shown)),
        h("dt", null, "Delivery"),
        h("dd", null, h("code", null, shown.id)),
        h("dt", null, "Event"),
        h("dd", null, h("a", { href: eventHref(shown.event_id) }, h("code", null, shown.event_id))),
        h("dt", null, "Attempts"),
        h("dd", null, String(shown.attempt_count)),
        h("dt", null, "Next attempt"),
        h("dd", null, when(shown.next_attempt_at)),
        h("dt", null, "Created"),
        h("dd", null, when(shown.created_at))
      ),
      h(
        "div",
        { class: "actions" },
        actionButton(
          "Redeliver",
          async () => {
            status.hidden = false
            status.textContent = "Sending…"
            const after = await retryAndWait(hookPath, shown.id)
            show(after)
            const last = after.attempts[after.attempts.length - 1]
            status.textContent =
              after.status === "delivered"
                ? `Delivered on attempt ${last?.number ?? after.attempt_count}.`
                : after.status === "pending"
                  ? "The attempt has not been made yet; this page refreshes by itself."
                  : `Attempt ${last?.number ?? after.attempt_count} failed: ${last?.error ?? `HTTP ${last?.status_code ?? "?"}`}.`
            if (after.status === "pending") watch()
          },
          { className: "primary" }
        )
      ),
      h("h2", null, "Attempts"),
      table(
        "Attempts",
        [
          { label: "#", cell: (a) => String(a.number) },
          { label: "Time", cell: (a) => when(a.attempted_at, { milliseconds: true }) },
          { label: "Duration", cell: (a) => `${a.duration_ms} ms` },
          {
            label: "Status code",
            cell: (a) => (a.status_code === null ? h("span", { class: "muted" }, "none") : String(a.status_code))
          },
          { label: "Outcome", cell: (a) => badge(a.outcome) },
          { label: "Error", cell: (a) => a.error ?? h("span", { class: "muted" }, "—") }
        ],
        shown.attempts,
        "No attempt yet."
      ),
      h("h2", null, "Requests and responses"),
      latestFirst.length === 0
        ? h(
            "section",
            { class: "card", "aria-label": "Payload" },
            h("h3", null, "Payload (to be sent)"),
            h("pre", { class: "payload" }, pretty(shown.payload))
          )
        : latestFirst.map((attempt, i) => exchange(url, shown.payload, attempt, i === 0))
    )
  }
  /** While the delivery is in flight, show it again every few seconds. */
  const watch = refresher(
    body,
    () => current.status === "pending",
    async () => {
      show(await api.get<DeliveryWithAttempts>(path))
    }
  )
  context.root.append(status, body)
  show(delivery)
  watch()
}
