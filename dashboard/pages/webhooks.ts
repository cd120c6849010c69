/**
 * Webhooks: the list, registering one (URL, event checkboxes, optional secret), a webhook's page (send a test
 * event, rotate the secret with an overlap, recover failed deliveries, edit, re-activate, delete, its delivery log
 * filtered by status, event type and date, refreshed while a delivery is in flight) and a delivery's page (each
 * attempt's request beside its response, Redeliver, refreshed while in flight).
 */
import { api, bodyOf, dataOf, oneOf, pageParam, someOf, taggedOf } from "../api.ts"
import { h, replace, uid } from "../dom.ts"
import { BASE, flashNext, navigate, type PageContext } from "../router.ts"
import {
  type Attempt,
  type Delivery,
  type DeliveryWithAttempts,
  eventTypes,
  TEST_EVENT,
  type WebhookHealth,
  type WebhookWithHealth
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
  readTaggedRecord,
  reloadWhenChangedMeanwhile,
  secretOnce,
  select,
  showWhenChangedMeanwhile,
  table,
  when
} from "../ui.ts"
import { filterForm } from "./projects.ts"

/**
 * A share as a whole percentage that is never rounded to 100 % while an attempt failed, nor to 0 % while one
 * succeeded.
 */
export const percent = (rate: number): number =>
  rate >= 1 ? 100 : rate <= 0 ? 0 : Math.min(99, Math.max(1, Math.round(rate * 100)))

/**
 * A webhook's health in the list: its latest attempt (status and time), then "97 % of 120 attempts in 24 h";
 * "No attempts yet" before the first one.
 */
const healthCell = (health: WebhookHealth | null): HTMLElement => {
  if (health === null) return h("span", { class: "muted" }, "No attempts yet")
  const last = health.last_status_code === null ? "no response" : `HTTP ${String(health.last_status_code)}`
  const n = health.attempts_24h
  return h(
    "div",
    { class: "health" },
    h(
      "div",
      { class: "health-last" },
      h("span", { class: `badge badge-${health.last_outcome}` }, last),
      " ",
      when(health.last_attempt_at)
    ),
    h(
      "div",
      { class: "health-share" },
      health.success_rate_24h === null || n === 0
        ? "No attempts in 24 h"
        : `${percent(health.success_rate_24h)} % of ${n} ${n === 1 ? "attempt" : "attempts"} in 24 h`
    )
  )
}

export const hookHref = (id: string): string => `${BASE}/webhooks/${encodeURIComponent(id)}`
export const deliveryHref = (hookId: string, id: string): string =>
  `${hookHref(hookId)}/deliveries/${encodeURIComponent(id)}`

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
  const hooks = listRegion<WebhookWithHealth>({
    caption: "Webhooks",
    columns: [
      { label: "URL", cell: (hook) => h("a", { href: hookHref(hook.id), class: "url" }, breakableUrl(hook.url)) },
      { label: "Events", cell: (hook) => h("span", { class: "scopes" }, hook.events.join(", ")) },
      { label: "Status", cell: (hook) => badge(hook.status) },
      { label: "Health", cell: (hook) => healthCell(hook.health) },
      { label: "Created", cell: (hook) => when(hook.created_at) }
    ],
    empty: "No webhooks yet.",
    fetch: () =>
      api
        .GET("/v1/webhooks", {
          params: {
            query: { page: pageParam(q("page")), per_page: 20, status: oneOf(["active", "failed"], q("status")) }
          }
        })
        .then(bodyOf),
    pageHref: (n) => context.href({ page: n })
  })

  const signatureChoice = select(
    [
      ["hmac", "Shared secret"],
      ["ed25519", "Ed25519 public key"]
    ],
    "hmac"
  )
  // A text field, not a password one: a password manager would fill the person's sign-in password into it.
  const secretInput = input({ type: "text", autocomplete: "off", spellcheck: "false", minlength: 16, maxlength: 256 })
  const secretField = field({
    label: "Secret (optional)",
    name: "secret",
    control: secretInput,
    hint: "16–256 characters, a new random one (never a password). Leave empty and the service makes one, shown once."
  })
  // An Ed25519 webhook is signed with a key pair: it takes no secret, so the field goes while that is chosen.
  // (`.field` is a grid, which the `hidden` attribute alone would not hide.)
  const showSecret = (shown: boolean) => {
    secretField.style.display = shown ? "" : "none"
    secretInput.disabled = !shown
  }
  signatureChoice.addEventListener("change", () => showSecret(signatureChoice.value !== "ed25519"))
  const form = onSubmit(
    h(
      "form",
      { class: "stack", "aria-label": "Register a webhook" },
      field({
        label: "Payload URL",
        name: "url",
        control: input({ type: "url", required: true, placeholder: "https://example.com/hooks/pcs" })
      }),
      eventChoices(),
      field({
        label: "Signature",
        name: "signature",
        control: signatureChoice,
        hint: "Ed25519: the service keeps the private key and shows the public key (whpk_…); give no secret."
      }),
      secretField,
      rateLimitField(null),
      h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Register webhook"))
    ),
    async (form) => {
      const signature = formValue(form, "signature")
      const secret = signature === "ed25519" ? "" : formValue(form, "secret")
      const hook = await api
        .POST("/v1/webhooks", {
          body: {
            url: formValue(form, "url"),
            events: someOf(eventTypes, checkedValues(form, "events")),
            ...(secret === "" ? {} : { secret }),
            ...(signature === "ed25519" ? { signature } : {}),
            rate_limit: rateLimitOf(form)
          }
        })
        .then(dataOf)
      form.reset()
      showSecret(true)
      form.closest("details")?.removeAttribute("open")
      created.replaceChildren(
        hook.public_key !== null
          ? h(
              "p",
              { class: "flash", role: "status" },
              `Webhook for ${hook.url} registered. Its public key: `,
              h("code", null, hook.public_key)
            )
          : hook.secret === undefined
            ? h("p", { class: "flash", role: "status" }, `Webhook for ${hook.url} registered.`)
            : secretOnce({
                title: `Webhook for ${hook.url} registered`,
                label: "Its signing secret",
                value: hook.secret
              })
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

/**
 * The event checkboxes of the webhook forms: "All events" first (it checks or clears the nine; it is checked when
 * they all are), then each type with its one-line description from the catalogue (`GET /v1/event-types`), added
 * when it arrives; without it the types alone are offered.
 */
const eventChoices = (checked?: ReadonlyArray<string>): HTMLFieldSetElement => {
  const fieldset = checkboxes({
    legend: "Events",
    name: "events",
    values: eventTypes,
    ...(checked === undefined ? {} : { checked })
  })
  const boxes = () => Array.from(fieldset.querySelectorAll<HTMLInputElement>('input[name="events"]'))
  const allId = uid("events-all")
  const all = h("input", { type: "checkbox", id: allId, checked: boxes().every((box) => box.checked) })
  const sync = () => {
    const on = boxes().filter((box) => box.checked).length
    all.checked = on === eventTypes.length
    all.indeterminate = on > 0 && on < eventTypes.length
  }
  all.addEventListener("change", () => {
    for (const box of boxes()) box.checked = all.checked
  })
  for (const box of boxes()) box.addEventListener("change", sync)
  sync()
  const grid = fieldset.querySelector(".check-grid")
  grid?.classList.add("described")
  grid?.before(h("div", { class: "check check-all" }, all, h("label", { for: allId }, "All events")))
  api
    .GET("/v1/event-types")
    .then(bodyOf)
    .then(({ data }) => {
      for (const box of boxes()) {
        const info = data.find((entry) => entry.type === box.value)
        if (info === undefined) continue
        const id = uid("event-description")
        box.setAttribute("aria-describedby", id)
        box.parentElement?.append(h("span", { class: "event-description", id }, info.description))
      }
    })
    .catch(() => undefined)
  return fieldset
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

/** The name of what the delivery's event is about (a project's name), or a dash. */
export const resourceCell = (d: Delivery): HTMLElement =>
  d.resource_name === null ? h("span", { class: "muted" }, "—") : h("span", { class: "resource" }, d.resource_name)

/** The status badge, with the words above beside it while a delivery is pending. */
export const statusCell = (d: Delivery): HTMLElement =>
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
  const byId = { params: { path: { id } } }
  const tagged = await readTaggedRecord(context, {
    read: () => api.GET("/v1/webhooks/{id}", byId).then(taggedOf),
    back: [`${BASE}/webhooks`, "← Webhooks"],
    label: "Webhook"
  })
  if (tagged === undefined) return
  const hook = tagged.data
  // The edit form, Set active again and Delete send the ETag the page was drawn from, so they never overwrite
  // someone else's change.
  let etag = tagged.etag
  /** `byId` with the `If-Match` of the version the page was drawn from. */
  const ifUnchanged = () => ({ params: { path: { id }, header: { "If-Match": etag } } })
  const heading = context.title("Webhook", badge(hook.status))
  const secretSlot = h("div", { class: "created-slot" })
  // An Ed25519 webhook is signed with a key pair: it has a public key to show and no secret to set or rotate.
  const ed25519 = hook.signature === "ed25519"
  const publicKey = h("dd", null, hook.public_key === null ? "" : h("code", null, hook.public_key))
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
      const page = await api
        .GET("/v1/webhooks/{id}/deliveries", {
          params: {
            path: { id },
            query: {
              page: pageParam(q("page")),
              per_page: 20,
              status: oneOf(["pending", "delivered", "failed"], q("status")),
              event_type: oneOf([...eventTypes, TEST_EVENT], q("event_type")),
              created_after: q("created_after") || undefined,
              created_before: q("created_before") || undefined
            }
          }
        })
        .then(bodyOf)
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
      { label: "Resource", cell: resourceCell },
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
                    const { attempt } = await retryAndWait(id, d.id)
                    say(manualOutcome(attempt))
                    await Promise.all([deliveries.load(), refreshHook()])
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
      const { queued } = await api
        .POST("/v1/webhooks/{id}/recover", {
          ...byId,
          body: { since: instantOf(formValue(form, "since")), ...(until === "" ? {} : { until }) }
        })
        .then(dataOf)
      say(
        queued === 0
          ? "No failed delivery in that window to recover."
          : `Queued ${queued} failed ${queued === 1 ? "delivery" : "deliveries"} for a new attempt.`
      )
      form.closest("details")?.removeAttribute("open")
      await watchDeliveries()
      if (queued > 0) await watchRecovery()
    }
  )

  /** "Set active again", shown while the webhook is failed. */
  const setActive = () =>
    actionButton("Set active again", async () => {
      const changed = await api
        .PUT("/v1/webhooks/{id}", { ...ifUnchanged(), body: { status: "active" } })
        .then(() => true, reloadWhenChangedMeanwhile(context, "webhook", "it was not set active"))
      if (!changed) return
      flashNext("Webhook set active.")
      context.refresh()
    })
  const setActiveSlot = h("span", { class: "set-active" }, hook.status === "failed" ? setActive() : null)
  const failedAt = h("dd", null, when(hook.failed_at))
  let shownStatus = hook.status
  /** Shows the webhook's status as it is now (a manual attempt that succeeds makes a failed webhook active). */
  const refreshHook = async () => {
    const tagged = await api.GET("/v1/webhooks/{id}", byId).then(taggedOf)
    const now = tagged.data
    if (now.status === shownStatus) return
    shownStatus = now.status
    // The page now shows this status: an edit compares this version's ETag, as long as what the edit form shows
    // (the URL, the events, the rate limit) is still what the page was drawn with; otherwise it keeps the old one,
    // so the edit is refused and the page shows the current version.
    const formUnchanged =
      now.url === hook.url && now.events.join() === hook.events.join() && now.rate_limit === hook.rate_limit
    if (formUnchanged) etag = tagged.etag
    heading.parentElement?.querySelector(".badge")?.replaceWith(badge(now.status))
    replace(failedAt, when(now.failed_at))
    setActiveSlot.replaceChildren(...(now.status === "failed" ? [setActive()] : []))
  }
  /**
   * After a recover: the queued attempts are made by the worker, and a failed delivery stays failed until one of them
   * succeeds, so the list and the webhook's status are shown again every few seconds, for up to 30 s or until the
   * webhook is active.
   */
  const watchRecovery = async () => {
    const deadline = Date.now() + 30_000
    while (deliveries.element.isConnected && Date.now() < deadline) {
      await sleep(REFRESH_MS)
      await Promise.all([deliveries.load(), refreshHook()])
      if (shownStatus === "active") return
    }
  }

  const actions = h(
    "div",
    { class: "actions" },
    actionButton(
      "Send test event",
      async () => {
        const delivery = await api.POST("/v1/webhooks/{id}/test", { ...byId, body: {} }).then(dataOf)
        say(
          `Test event sent (${TEST_EVENT}). `,
          h("a", { href: deliveryHref(hook.id, delivery.id) }, "See its delivery")
        )
        await watchDeliveries()
      },
      { className: "primary" }
    ),
    actionButton(ed25519 ? "Rotate key pair" : "Rotate secret", async () => {
      if (
        !(await confirmAction(
          ed25519
            ? "Make a new key pair? Deliveries are signed with its private key from now on, and with the current one too for a while (two v1a entries in webhook-signature)."
            : "Make a new signing secret? Deliveries are signed with it from now on; the current one still verifies webhook-signature for a while (X-Service-Signature uses the new one at once).",
          ed25519 ? "Rotate key pair" : "Rotate secret"
        ))
      )
        return
      const rotated = await api.POST("/v1/webhooks/{id}/rotate-secret", { ...byId, body: {} }).then(dataOf)
      // The rotation changed the record (its secret's expiry): the form edits that version now.
      etag = (await api.GET("/v1/webhooks/{id}", byId).then(taggedOf)).etag
      if (rotated.public_key !== null) replace(publicKey, h("code", null, rotated.public_key))
      secretSlot.replaceChildren(
        rotated.public_key !== null
          ? h(
              "p",
              { class: "flash", role: "status" },
              "Key pair rotated. The new public key: ",
              h("code", null, rotated.public_key)
            )
          : rotated.secret === undefined
            ? h("p", { class: "flash", role: "status" }, "Secret rotated.")
            : secretOnce({ title: "Secret rotated", label: "The new signing secret", value: rotated.secret }),
        h(
          "p",
          { class: "overlap", role: "status" },
          ed25519 ? "The previous key still signs (a second " : "The previous secret still verifies (the second ",
          h("code", null, "webhook-signature"),
          " entry) until ",
          h("strong", null, dateTimeFormat.format(new Date(rotated.previous_secret_expires_at))),
          ed25519
            ? ". Give your receiver the new public key before then."
            : ". Put the new one in your receiver before then."
        )
      )
    }),
    setActiveSlot,
    actionButton(
      "Delete webhook",
      async () => {
        if (!(await confirmAction(`Delete the webhook for ${hook.url} and its delivery log?`, "Delete webhook"))) return
        const deleted = await api
          .DELETE("/v1/webhooks/{id}", ifUnchanged())
          .then(() => true, reloadWhenChangedMeanwhile(context, "webhook", "it was not deleted"))
        if (!deleted) return
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
        eventChoices(hook.events),
        rateLimitField(hook.rate_limit),
        h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Save changes"))
      ),
      async (form) => {
        const saved = await api
          .PUT("/v1/webhooks/{id}", {
            ...ifUnchanged(),
            body: {
              url: formValue(form, "url"),
              events: someOf(eventTypes, checkedValues(form, "events")),
              rate_limit: rateLimitOf(form)
            }
          })
          .then(
            () => true,
            // Someone else saved first (or a delivery changed its status and more): the current version.
            showWhenChangedMeanwhile(
              form,
              "webhook",
              () => api.GET("/v1/webhooks/{id}", byId).then(taggedOf),
              (current) => [
                ["Payload URL", current.url],
                ["Events", current.events.join(", ")],
                ["Status", current.status],
                ["Updated", when(current.updated_at)]
              ],
              (tag) => {
                etag = tag
              }
            )
          )
        if (!saved) return
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
      h("dt", null, "Signature"),
      h("dd", null, ed25519 ? "Ed25519 key pair (v1a)" : "Shared secret (HMAC)"),
      ...(ed25519 ? [h("dt", null, "Public key"), publicKey] : []),
      h("dt", null, "Events"),
      h("dd", null, hook.events.join(", ")),
      h("dt", null, "Rate limit"),
      h("dd", null, hook.rate_limit === null ? "None" : `${hook.rate_limit} attempts a second`),
      h("dt", null, "ID"),
      h("dd", null, h("code", null, hook.id)),
      h("dt", null, "Created"),
      h("dd", null, when(hook.created_at)),
      h("dt", null, "Failed at"),
      failedAt
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
 * The manual retry: `POST …/retry` (202) asks for one extra attempt, which the service's delivery worker makes
 * (before any scheduled one); this waits (up to 30 s) until that attempt is recorded, a manual attempt numbered after
 * every attempt shown before, and answers the delivery with it (no attempt when it has not been made in time).
 */
export const retryAndWait = async (
  hookId: string,
  deliveryId: string
): Promise<{ readonly delivery: DeliveryWithAttempts; readonly attempt: Attempt | undefined }> => {
  const byIds = { params: { path: { id: hookId, delivery_id: deliveryId } } }
  const before = await api.GET("/v1/webhooks/{id}/deliveries/{delivery_id}", byIds).then(dataOf)
  const known = before.attempts.reduce((max, a) => Math.max(max, a.number), 0)
  await api.POST("/v1/webhooks/{id}/deliveries/{delivery_id}/retry", byIds)
  const deadline = Date.now() + 30_000
  for (;;) {
    const now = await api.GET("/v1/webhooks/{id}/deliveries/{delivery_id}", byIds).then(dataOf)
    const attempt = now.attempts.find((a) => a.trigger === "manual" && a.number > known)
    if (attempt !== undefined || Date.now() > deadline) return { delivery: now, attempt }
    await sleep(400)
  }
}

/** What a manual attempt came to, in words. */
export const manualOutcome = (attempt: Attempt | undefined): string =>
  attempt === undefined
    ? "The attempt has not been made yet; the delivery log shows it once it is."
    : attempt.outcome === "succeeded"
      ? `Attempt ${attempt.number} (manual) succeeded: HTTP ${attempt.status_code ?? "?"}. The delivery is delivered.`
      : `Attempt ${attempt.number} (manual) failed: ${attempt.error ?? `HTTP ${attempt.status_code ?? "?"}`}. The delivery's status and schedule are unchanged.`

/** Scheduled attempts made (of five), and the manual ones beside them. */
const attemptsFact = (d: DeliveryWithAttempts): string => {
  const manual = d.attempts.filter((a) => a.trigger === "manual").length
  return `${d.attempt_count} of ${ATTEMPTS} scheduled${manual === 0 ? "" : `, ${manual} manual`}`
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
      `Attempt ${attempt.number}${attempt.trigger === "manual" ? " (manual)" : ""}: `,
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
  const byIds = { params: { path: { id: hookId, delivery_id: id } } }
  const read = () => api.GET("/v1/webhooks/{id}/deliveries/{delivery_id}", byIds).then(dataOf)
  const delivery = await readRecord(context, {
    read,
    back: [hookHref(hookId), "← Webhook"],
    label: "Delivery"
  })
  if (delivery === undefined) return
  // The webhook's URL, for the request line (the delivery does not carry it); without it the line says less.
  const url = await api
    .GET("/v1/webhooks/{id}", { params: { path: { id: hookId } } })
    .then(dataOf)
    .then(
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
        ...(shown.resource_name === null ? [] : [h("dt", null, "Resource"), h("dd", null, shown.resource_name)]),
        h("dt", null, "Attempts"),
        h("dd", null, attemptsFact(shown)),
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
            const { delivery: after, attempt } = await retryAndWait(hookId, shown.id)
            show(after)
            status.textContent = manualOutcome(attempt)
            if (after.status === "pending" || attempt === undefined) watch()
          },
          { className: "primary" }
        )
      ),
      h("h2", null, "Attempts"),
      table(
        "Attempts",
        [
          { label: "#", cell: (a) => String(a.number) },
          { label: "Trigger", cell: (a) => (a.trigger === "manual" ? "manual" : "schedule") },
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
      show(await read())
    }
  )
  context.root.append(status, body)
  show(delivery)
  watch()
}

/** The webhook's `rate_limit`: a whole number of attempts a second; empty for none. */
const rateLimitField = (value: number | null) =>
  field({
    label: "Rate limit (attempts a second)",
    name: "rate_limit",
    control: input({ type: "number", min: 1, max: 10_000, step: 1, inputmode: "numeric", value: value ?? "" }),
    hint: "At most this many attempts start in any second; the other deliveries wait their turn. Empty: no limit."
  })

const rateLimitOf = (form: HTMLFormElement): number | null => {
  const value = formValue(form, "rate_limit")
  return value === "" ? null : Number(value)
}
