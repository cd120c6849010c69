/**
 * Webhooks: the list, registering one (URL, event checkboxes, optional secret), a webhook's page (edit, rotate the
 * secret, re-activate, delete, its delivery log by status) and a delivery's page (every attempt, and Retry).
 */
import { api } from "../api.ts"
import { h, replace } from "../dom.ts"
import { BASE, flashNext, navigate, type PageContext } from "../router.ts"
import { type CreatedWebhook, type Delivery, type DeliveryWithAttempts, eventTypes, type Webhook } from "../types.ts"
import {
  actionButton,
  badge,
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

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
/** A new signing secret made in the browser (`whsec_` + 32 base62 characters, as the service makes them). */
const newSecret = (): string => {
  const out: Array<string> = []
  while (out.length < 32) {
    for (const byte of crypto.getRandomValues(new Uint8Array(48))) {
      // 248 = 4 × 62: drop the bytes above it, so every character is equally likely.
      if (byte < 248 && out.length < 32) out.push(BASE62[byte % 62] ?? "0")
    }
  }
  return `whsec_${out.join("")}`
}

export const webhooksPage = async (context: PageContext): Promise<void> => {
  const { q } = context
  context.title("Webhooks")
  context.root.append(
    h(
      "p",
      { class: "muted" },
      "The service POSTs each event you subscribe to, signed with ",
      h("code", null, "X-Service-Signature: sha256=…"),
      ". A delivery is tried 5 times; after the fifth failure it is failed, and so is the webhook until a delivery succeeds."
    )
  )
  const created = h("div", { class: "created-slot" })
  const hooks = listRegion<Webhook>({
    caption: "Webhooks",
    columns: [
      { label: "URL", cell: (hook) => h("a", { href: hookHref(hook.id), class: "url" }, hook.url) },
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
        control: input({ type: "password", autocomplete: "new-password", minlength: 16 }),
        hint: "16–256 characters. Leave empty and the service makes one, shown once."
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

export const webhookPage = async (context: PageContext): Promise<void> => {
  const { q } = context
  const id = context.params[0] ?? ""
  const path = `/webhooks/${encodeURIComponent(id)}`
  const hook = await readRecord<Webhook>(context, { path, back: [`${BASE}/webhooks`, "← Webhooks"], label: "Webhook" })
  if (hook === undefined) return
  context.title("Webhook", badge(hook.status))
  const secretSlot = h("div", { class: "created-slot" })

  const actions = h(
    "div",
    { class: "actions" },
    actionButton("Rotate secret", async () => {
      if (
        !(await confirmAction(
          "Make a new signing secret? Deliveries are signed with it from now on; update your receiver.",
          "Rotate secret"
        ))
      )
        return
      const secret = newSecret()
      await api.put<Webhook>(path, { secret })
      secretSlot.replaceChildren(
        secretOnce({ title: "Secret rotated", label: "The new signing secret", value: secret })
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

  const deliveries = listRegion<Delivery>({
    caption: "Deliveries",
    loading: "Loading deliveries…",
    fetch: () =>
      api.list<Delivery>(`${path}/deliveries`, {
        page: q("page") || undefined,
        per_page: 20,
        status: q("status") || undefined
      }),
    pageHref: (n) => context.href({ page: n }),
    empty: q("status") === "" ? "No deliveries yet." : `No ${q("status")} deliveries.`,
    columns: [
      { label: "Event", cell: (d) => h("a", { href: deliveryHref(hook.id, d.id) }, d.event_type) },
      { label: "Status", cell: (d) => badge(d.status) },
      { label: "Attempts", cell: (d) => String(d.attempt_count) },
      { label: "Last attempt", cell: (d) => when(d.last_attempt_at) },
      { label: "Next attempt", cell: (d) => when(d.next_attempt_at) },
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
      })
    ],
    ["status"]
  )

  context.root.append(
    h(
      "dl",
      { class: "facts" },
      h("dt", null, "URL"),
      h("dd", null, h("code", { class: "url" }, hook.url)),
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
    secretSlot,
    edit,
    h(
      "section",
      { class: "section", "aria-labelledby": "deliveries-title" },
      h("h2", { id: "deliveries-title" }, "Deliveries"),
      filters,
      deliveries.element
    )
  )
  await deliveries.load()
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * The manual retry: `POST …/retry` (202) schedules one immediate attempt, which the service's delivery worker
 * makes; this waits (up to 30 s) until the delivery is no longer pending and answers it with its attempts.
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
  const heading = context.title(`Delivery of ${delivery.event_type}`, badge(delivery.status))
  const status = h("p", { class: "flash", role: "status", hidden: true })
  const body = h("div")

  const show = (current: DeliveryWithAttempts) => {
    heading.parentElement?.querySelector(".badge")?.replaceWith(badge(current.status))
    replace(
      body,
      h(
        "dl",
        { class: "facts" },
        h("dt", null, "Delivery"),
        h("dd", null, h("code", null, current.id)),
        h("dt", null, "Event"),
        h("dd", null, h("code", null, current.event_id)),
        h("dt", null, "Attempts"),
        h("dd", null, String(current.attempt_count)),
        h("dt", null, "Next attempt"),
        h("dd", null, when(current.next_attempt_at)),
        h("dt", null, "Created"),
        h("dd", null, when(current.created_at))
      ),
      current.status === "failed"
        ? h(
            "div",
            { class: "actions" },
            actionButton(
              "Retry",
              async () => {
                status.hidden = false
                status.textContent = "Retrying…"
                const after = await retryAndWait(hookPath, current.id)
                show(after)
                const last = after.attempts[after.attempts.length - 1]
                status.textContent =
                  after.status === "delivered"
                    ? `Delivered on attempt ${last?.number ?? after.attempt_count}.`
                    : after.status === "pending"
                      ? "The attempt has not been made yet; reload in a moment."
                      : `Attempt ${last?.number ?? after.attempt_count} failed: ${last?.error ?? `HTTP ${last?.status_code ?? "?"}`}.`
              },
              { className: "primary" }
            )
          )
        : null,
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
          { label: "Error", cell: (a) => a.error ?? h("span", { class: "muted" }, "—") },
          {
            label: "Response body",
            className: "body-cell",
            cell: (a) =>
              a.response_body === null || a.response_body === ""
                ? h("span", { class: "muted" }, "empty")
                : h(
                    "details",
                    null,
                    h("summary", null, `Show (${a.response_body.length} characters)`),
                    h("pre", null, a.response_body)
                  )
          }
        ],
        current.attempts,
        "No attempt yet."
      )
    )
  }
  context.root.append(status, body)
  show(delivery)
}
