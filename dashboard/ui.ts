/**
 * The dashboard's building blocks: labelled fields that show their own API error, forms that report
 * `error.message` and put each of `error.details` next to its field, confirmation dialogs, tables that become
 * cards on a phone, pagers, list regions (table + pager, or the error box), status badges, and the shown-once
 * secret panel.
 */
import { ApiError, isChangedMeanwhile, messageOf, type Tagged } from "./api.ts"
import { type Child, h, uid } from "./dom.ts"
import { flashNext } from "./router.ts"
import type { ListMeta, Page } from "./types.ts"

type Control = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement

/**
 * A label, its control, an optional hint and a slot for the API's message about this field. `name` is the API's
 * field name: `details` entries for `name` or `name.<n>` land here.
 */
export const field = (options: {
  readonly label: string
  readonly name: string
  readonly control: Control
  readonly hint?: string
}): HTMLDivElement => {
  const id = options.control.id || uid(options.name.replace(/[^a-z0-9]/gi, ""))
  options.control.id = id
  if (options.control.name === "") options.control.name = options.name
  const errorId = `${id}-error`
  const hintId = options.hint === undefined ? undefined : `${id}-hint`
  options.control.setAttribute("aria-describedby", [hintId, errorId].filter((x) => x !== undefined).join(" "))
  return h(
    "div",
    { class: "field", "data-field": options.name },
    h("label", { for: id }, options.label),
    options.control,
    options.hint === undefined ? null : h("p", { class: "hint", id: hintId }, options.hint),
    h("p", { class: "field-error", id: errorId })
  )
}

/** A group of checkboxes under one field name (`scopes`, `events`), with a legend and its error slot. */
export const checkboxes = (options: {
  readonly legend: string
  readonly name: string
  readonly values: ReadonlyArray<string>
  readonly checked?: ReadonlyArray<string>
  readonly hint?: string
  /** A line under each value saying what it means (the checkbox is described by it). */
  readonly descriptions?: Readonly<Record<string, string>>
}): HTMLFieldSetElement => {
  const errorId = uid(`${options.name}-error`)
  return h(
    "fieldset",
    { class: "field checks", "data-field": options.name, "aria-describedby": errorId },
    h("legend", null, options.legend),
    options.hint === undefined ? null : h("p", { class: "hint" }, options.hint),
    h(
      "div",
      { class: options.descriptions === undefined ? "check-grid" : "check-grid described" },
      options.values.map((value) => {
        const id = uid(options.name)
        const description = options.descriptions?.[value]
        return h(
          "div",
          { class: "check" },
          h("input", {
            type: "checkbox",
            id,
            name: options.name,
            value,
            checked: options.checked?.includes(value) ?? false,
            "aria-describedby": description === undefined ? undefined : `${id}-description`
          }),
          h("label", { for: id }, value),
          description === undefined
            ? null
            : h("span", { class: "check-description", id: `${id}-description` }, description)
        )
      })
    ),
    h("p", { class: "field-error", id: errorId })
  )
}

export const input = (attrs: Record<string, string | number | boolean | undefined> = {}): HTMLInputElement =>
  h("input", { type: "text", ...attrs })

export const select = (
  options: ReadonlyArray<readonly [value: string, label: string]>,
  selected?: string,
  attrs: Record<string, string | boolean | undefined> = {}
): HTMLSelectElement =>
  h(
    "select",
    attrs,
    options.map(([value, label]) => h("option", { value, selected: value === selected }, label))
  )

export const checkedValues = (form: HTMLFormElement, name: string): Array<string> =>
  Array.from(form.querySelectorAll<HTMLInputElement>(`input[type=checkbox][name="${name}"]`))
    .filter((box) => box.checked)
    .map((box) => box.value)

export const formValue = (form: HTMLFormElement, name: string): string => {
  const control = form.elements.namedItem(name)
  return control instanceof HTMLInputElement ||
    control instanceof HTMLSelectElement ||
    control instanceof HTMLTextAreaElement
    ? control.value
    : ""
}

const clearErrors = (form: HTMLFormElement) => {
  form.querySelector(".form-error")?.remove()
  for (const slot of Array.from(form.querySelectorAll(".field-error"))) slot.textContent = ""
  for (const invalid of Array.from(form.querySelectorAll("[aria-invalid]"))) invalid.removeAttribute("aria-invalid")
}

/**
 * Shows an error on a form, once: each detail next to its field (focus goes to the first such field, which its
 * message describes); the banner on top only for what no field shows (an error without details, or a detail for a
 * field the form does not have), so nothing is said twice.
 */
export const showFormError = (form: HTMLFormElement, error: unknown): void => {
  clearErrors(form)
  const unmatched: Array<string> = []
  let matched = 0
  if (error instanceof ApiError) {
    for (const detail of error.details) {
      const name = detail.field.split(".")[0] ?? detail.field
      const wrapper = form.querySelector(`[data-field="${CSS.escape(name)}"]`)
      const slot = wrapper?.querySelector(".field-error")
      if (wrapper === null || wrapper === undefined || slot === null || slot === undefined) {
        unmatched.push(`${detail.field}: ${detail.message}`)
        continue
      }
      slot.textContent = slot.textContent === "" ? detail.message : `${slot.textContent}; ${detail.message}`
      wrapper.querySelector("input, select, textarea")?.setAttribute("aria-invalid", "true")
      matched++
    }
  }
  const firstInvalid = form.querySelector<HTMLElement>("[aria-invalid=true]")
  if (matched > 0 && unmatched.length === 0) {
    firstInvalid?.focus()
    return
  }
  const box = h(
    "div",
    { class: "form-error", role: "alert" },
    h("p", null, messageOf(error)),
    unmatched.length === 0
      ? null
      : h(
          "ul",
          null,
          unmatched.map((line) => h("li", null, line))
        )
  )
  form.prepend(box)
  firstInvalid?.focus()
}

/**
 * Busy, not disabled: a disabled button loses focus (to `<body>`), so a button at work keeps focus and says so with
 * `aria-disabled` and `aria-busy`; its clicks are ignored until it is done.
 */
const setBusy = (button: HTMLButtonElement, busy: boolean): void => {
  if (busy) {
    button.setAttribute("aria-disabled", "true")
    button.setAttribute("aria-busy", "true")
  } else {
    button.removeAttribute("aria-disabled")
    button.removeAttribute("aria-busy")
  }
}

const isBusy = (element: Element): boolean => element.getAttribute("aria-busy") === "true"

/** Whether focus was lost: on `<body>`, nowhere, or on an element no longer on the page. */
const focusLost = (): boolean => {
  const active = document.activeElement
  return active === null || active === document.body || !active.isConnected
}

/** Focus on an element that is not focusable by itself (a heading): made focusable by script only. */
export const focusQuietly = (element: HTMLElement): void => {
  if (!element.hasAttribute("tabindex")) element.setAttribute("tabindex", "-1")
  element.focus()
}

/**
 * Where focus goes when the element that had it is gone (its row was deleted, its panel closed): the heading of
 * the nearest region that is still on the page, else the page's `h1`.
 */
const neighbourOf = (ancestors: ReadonlyArray<Element>): HTMLElement | null => {
  for (const ancestor of ancestors) {
    if (!ancestor.isConnected) continue
    const heading = ancestor.querySelector<HTMLElement>("h1, h2, h3")
    if (heading !== null) return heading
  }
  return document.querySelector<HTMLElement>("main h1")
}

const ancestorsOf = (element: Element): Array<Element> => {
  const found: Array<Element> = []
  for (let at = element.parentElement; at !== null; at = at.parentElement) {
    if (at.matches("section, form, .page, main")) found.push(at)
  }
  return found
}

/** What names a control for a person: its `aria-label`, else its text. */
const nameOf = (element: Element): string => element.getAttribute("aria-label") ?? (element.textContent ?? "").trim()

/**
 * The control that stands where `element` stood once the list or page it was in has been drawn again: the one
 * connected control of the same kind and name (a row's "Change the role of Bob" in the redrawn list). None when
 * the name is shared (two plain "Revoke"s) or gone (the row's action changed).
 */
export const twinOf = (element: Element, within: ParentNode = document): HTMLElement | null => {
  const name = nameOf(element)
  if (name === "") return null
  const candidates = Array.from(within.querySelectorAll<HTMLElement>(element.tagName)).filter(
    (candidate) => candidate !== element && nameOf(candidate) === name && candidate.getClientRects().length > 0
  )
  return candidates.length === 1 ? (candidates[0] ?? null) : null
}

/**
 * After an action: focus back on `opener` if it is still there, else on its twin in what was drawn again, else on
 * a neighbour; never left on `<body>`.
 */
const restoreFocus = (opener: HTMLElement, ancestors: ReadonlyArray<Element>): void => {
  if (!focusLost()) return
  if (opener.isConnected) {
    opener.focus()
    return
  }
  const twin = twinOf(opener)
  if (twin !== null) {
    twin.focus()
    return
  }
  const neighbour = neighbourOf(ancestors)
  if (neighbour !== null) focusQuietly(neighbour)
}

/**
 * The page's status banner (`main > .flash`, `role=status`): a live region that main.ts puts on every page, empty
 * until there is news, so a screen reader hears what is written into it.
 */
const statusBanner = (): HTMLElement | null => {
  const main = document.querySelector("main")
  if (main === null) return null
  const existing = main.querySelector<HTMLElement>(":scope > .flash")
  if (existing !== null) return existing
  const banner = h("p", { class: "flash", role: "status" })
  main.prepend(banner)
  return banner
}

/** A new action starts: the result banner of the previous one (`.flash`) is no longer news. */
const clearBanners = (): void => {
  // Emptied, not removed: the page's banner is the live region the next result is said in.
  for (const banner of Array.from(document.querySelectorAll<HTMLElement>(".flash"))) banner.replaceChildren()
}

/** Says an action's result in the page's status banner (replacing the previous one), where a screen reader hears it. */
export const announce = (message: string): void => {
  const banner = statusBanner()
  if (banner !== null) banner.textContent = message
}

/**
 * A form whose action succeeded: emptied for the next use and folded away (its `<details>` closed), with focus on
 * the summary that opened it, where the person came from.
 */
export const closeForm = (form: HTMLFormElement): void => {
  form.reset()
  const details = form.closest("details")
  if (details === null) return
  details.open = false
  details.querySelector<HTMLElement>(":scope > summary")?.focus()
}

/** Runs `action` on submit with the form's buttons busy; any failure is shown on the form. */
export const onSubmit = (form: HTMLFormElement, action: (form: HTMLFormElement) => Promise<void>): HTMLFormElement => {
  form.noValidate = true
  form.addEventListener("submit", (event) => {
    event.preventDefault()
    if (isBusy(form)) return
    const buttons = Array.from(form.querySelectorAll("button"))
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : form
    const ancestors = ancestorsOf(opener)
    for (const button of buttons) setBusy(button, true)
    form.setAttribute("aria-busy", "true")
    clearErrors(form)
    clearBanners()
    action(form)
      .catch((error: unknown) => showFormError(form, error))
      .finally(() => {
        for (const button of buttons) setBusy(button, false)
        form.removeAttribute("aria-busy")
        restoreFocus(opener, ancestors)
      })
  })
  return form
}

/** A button whose click runs `action`; a failure is shown in `errors` (or beside the button). */
export const actionButton = (
  label: string,
  action: () => Promise<void>,
  options: { readonly className?: string; readonly errors?: HTMLElement; readonly ariaLabel?: string } = {}
): HTMLButtonElement => {
  const button: HTMLButtonElement = h(
    "button",
    {
      type: "button",
      class: options.className,
      "aria-label": options.ariaLabel,
      onclick: () => {
        if (isBusy(button)) return
        setBusy(button, true)
        const ancestors = ancestorsOf(button)
        const place = options.errors ?? button.parentElement
        place?.querySelector(":scope > .inline-error")?.remove()
        clearBanners()
        action()
          .catch((error: unknown) => {
            const note = h("p", { class: "inline-error", role: "alert" }, messageOf(error))
            if (options.errors !== undefined) options.errors.prepend(note)
            else button.after(note)
          })
          .finally(() => {
            setBusy(button, false)
            restoreFocus(button, ancestors)
          })
      }
    },
    label
  )
  return button
}

/** A modal confirmation (native `<dialog>`: focus stays inside, Escape cancels). Resolves true on confirm. */
export const confirmAction = (message: string, confirmLabel: string): Promise<boolean> => {
  const titleId = uid("confirm")
  const dialog = h(
    "dialog",
    { class: "confirm", "aria-labelledby": titleId },
    h(
      "form",
      { method: "dialog" },
      h("p", { id: titleId }, message),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "submit", value: "cancel", autofocus: true }, "Cancel"),
        h("button", { type: "submit", value: "confirm", class: "danger" }, confirmLabel)
      )
    )
  )
  const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null
  document.body.append(dialog)
  dialog.showModal()
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      dialog.remove()
      // Back where it came from (the browser's own return can miss when the opener changed meanwhile).
      if (opener?.isConnected) opener.focus()
      resolve(dialog.returnValue === "confirm")
    })
  })
}

/**
 * A URL that wraps at its separators (after `/`, before `?`, `&`, `.`, `#`) rather than mid-word: `<wbr>` break
 * opportunities; a segment longer than the line still breaks (`.url`'s `overflow-wrap: break-word`).
 */
export const breakableUrl = (url: string): Array<Child> =>
  url
    .split(/(?<=\/)(?!\/)|(?=[?&.#])/)
    .flatMap((part, index): Array<Child> => (index === 0 ? [part] : [h("wbr", null), part]))

export const badge = (status: string): HTMLSpanElement => h("span", { class: `badge badge-${status}` }, status)

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" })
// Every time carries its zone ("14:14:05 UTC", "9:14:05 AM EST"): a reader comparing it with a log or a colleague's
// screen must not have to guess which zone the browser chose.
const timeFormat = new Intl.DateTimeFormat(undefined, {
  hour: "numeric",
  minute: "2-digit",
  second: "2-digit",
  timeZoneName: "short"
})
const preciseTimeFormat = new Intl.DateTimeFormat(undefined, {
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  fractionalSecondDigits: 3,
  timeZoneName: "short"
})

/**
 * A timestamp in the reader's time zone, named (the exact ISO value in its `datetime` and tooltip). A narrow column may
 * put the time under the date, but never breaks either of them.
 */
export const when = (iso: string | null | undefined, options: { readonly milliseconds?: boolean } = {}): Child => {
  if (iso === null || iso === undefined) return h("span", { class: "muted" }, "—")
  const date = new Date(iso)
  const time = (options.milliseconds === true ? preciseTimeFormat : timeFormat).format(date)
  return h(
    "time",
    { datetime: iso, title: iso },
    h("span", { class: "nowrap" }, `${dateFormat.format(date)},`),
    " ",
    h("span", { class: "nowrap" }, time)
  )
}

export interface Column<T> {
  readonly label: string
  readonly cell: (row: T) => Child
  readonly className?: string
}

/** A table; below 640 px each row becomes a card, every cell labelled by its column. */
export const table = <T>(
  caption: string,
  columns: ReadonlyArray<Column<T>>,
  rows: ReadonlyArray<T>,
  empty: string
): HTMLElement =>
  rows.length === 0
    ? h("p", { class: "empty" }, empty)
    : h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          null,
          h("caption", { class: "visually-hidden" }, caption),
          h(
            "thead",
            null,
            h(
              "tr",
              null,
              columns.map((column) => h("th", { scope: "col", class: column.className }, column.label))
            )
          ),
          h(
            "tbody",
            null,
            rows.map((row) =>
              h(
                "tr",
                null,
                columns.map((column) =>
                  h("td", { "data-label": column.label, class: column.className }, column.cell(row))
                )
              )
            )
          )
        )
      )

/** Previous / next links for a list page; `hrefFor(n)` is the address of page n. */
export const pager = (meta: ListMeta, hrefFor: (page: number) => string): HTMLElement | null => {
  const last = Math.max(1, Math.ceil(meta.total / meta.per_page))
  if (meta.total === 0 && meta.page === 1) return null
  if (meta.total <= meta.per_page && meta.page === 1) {
    return h("p", { class: "muted pager-summary" }, `${meta.total} in all`)
  }
  return h(
    "nav",
    { class: "pager", "aria-label": "Pages" },
    meta.page > 1
      ? h("a", { href: hrefFor(meta.page - 1), rel: "prev" }, "← Previous")
      : h("span", { class: "muted" }, "← Previous"),
    h("span", null, `Page ${meta.page} of ${last} · ${meta.total} in all`),
    meta.page < last
      ? h("a", { href: hrefFor(meta.page + 1), rel: "next" }, "Next →")
      : h("span", { class: "muted" }, "Next →")
  )
}

/**
 * How a record's page begins: a link back to its list, then the record `read` gives. When it cannot be read,
 * the page is titled `label` and says why (the error box), and the answer is `undefined`.
 */
/** `readRecord` with the record's `ETag` (`Tagged`, `taggedOf`), for a page whose edits send `If-Match`. */
export const readTaggedRecord = async <T>(
  context: { readonly root: HTMLElement; title(text: string, ...after: Array<Child>): HTMLHeadingElement },
  options: {
    readonly read: () => Promise<Tagged<T>>
    readonly back: readonly [href: string, text: string]
    readonly label: string
  }
): Promise<Tagged<T> | undefined> => {
  const [href, text] = options.back
  context.root.append(h("p", { class: "crumbs" }, h("a", { href }, text)))
  try {
    return await options.read()
  } catch (error) {
    context.title(options.label)
    context.root.append(errorBox(error))
    return undefined
  }
}

/**
 * What a form shows when its save was refused because someone else changed the record meanwhile (412): that it
 * was not saved, the current version's facts, and that saving again replaces that version with the form's values.
 */
export const changedMeanwhileBox = (
  kind: string,
  facts: ReadonlyArray<readonly [label: string, value: Child]>
): HTMLElement =>
  h(
    "div",
    { class: "form-error changed-meanwhile", role: "alert" },
    h("p", null, `Someone else changed this ${kind} while you were editing it, so your changes were not saved.`),
    h("p", null, `The current version:`),
    h(
      "dl",
      { class: "facts" },
      facts.flatMap(([label, value]) => [h("dt", null, label), h("dd", null, value)])
    ),
    h("p", null, "Your edits are still in the form: save again to replace the current version with them.")
  )

/**
 * For a form's change sent with `If-Match` (`.then(() => true, showWhenChangedMeanwhile(…))`): when it was refused
 * because someone else changed the `record` first (412), its current version is read, its tag handed to `retag` (so
 * saving again, on purpose, replaces it), and its `facts` shown above the form, which keeps the user's edits; false.
 * Any other failure goes on to the form's error.
 */
export const showWhenChangedMeanwhile =
  <T>(
    form: HTMLElement,
    record: string,
    read: () => Promise<Tagged<T>>,
    facts: (current: T) => ReadonlyArray<readonly [label: string, value: Child]>,
    retag: (etag: string | undefined) => void
  ) =>
  async (error: unknown): Promise<false> => {
    if (!isChangedMeanwhile(error)) throw error
    const current = await read()
    retag(current.etag)
    form.prepend(changedMeanwhileBox(record, facts(current.data)))
    return false
  }

/**
 * For a button's change sent with `If-Match` (`.then(() => true, reloadWhenChangedMeanwhile(…))`): when it was
 * refused because someone else changed the `record` meanwhile (412), the page again, with the current version and
 * the reason (`outcome`: what was not done); false. Any other failure goes on to the button's error.
 */
export const reloadWhenChangedMeanwhile =
  (context: { refresh(): void }, record: string, outcome: string) =>
  (error: unknown): false => {
    if (!isChangedMeanwhile(error)) throw error
    flashNext(`Someone else changed this ${record} meanwhile, so ${outcome}. This is the current version.`)
    context.refresh()
    return false
  }

export const readRecord = async <T>(
  context: { readonly root: HTMLElement; title(text: string, ...after: Array<Child>): HTMLHeadingElement },
  options: {
    readonly read: () => Promise<T>
    readonly back: readonly [href: string, text: string]
    readonly label: string
  }
): Promise<T | undefined> => {
  const [href, text] = options.back
  context.root.append(h("p", { class: "crumbs" }, h("a", { href }, text)))
  try {
    return await options.read()
  } catch (error) {
    context.title(options.label)
    context.root.append(errorBox(error))
    return undefined
  }
}

export const errorBox = (error: unknown): HTMLElement =>
  h(
    "div",
    { class: "form-error", role: "alert" },
    h("p", null, messageOf(error)),
    error instanceof ApiError && error.details.length > 0
      ? h(
          "ul",
          null,
          error.details.map((detail) => h("li", null, `${detail.field}: ${detail.message}`))
        )
      : null
  )

/** A list on a page: its container (live region) and `load()`, which fetches the page again and redraws it. */
export interface ListRegion {
  readonly element: HTMLElement
  readonly load: () => Promise<void>
}

/**
 * One list region, the same everywhere: "Loading…" until the first answer, then the table (or the `empty` line)
 * with its pager, or the API's error in an error box. `load()` never rejects. Without `pageHref` there is no pager
 * (a list that is never longer than one page).
 */
export const listRegion = <T>(options: {
  readonly caption: string
  readonly columns: ReadonlyArray<Column<T>>
  readonly empty: string
  readonly fetch: () => Promise<Page<T>>
  readonly pageHref?: (page: number) => string
  readonly loading?: string
}): ListRegion => {
  const element = h(
    "div",
    { class: "list", "aria-live": "polite" },
    h("p", { class: "loading" }, options.loading ?? "Loading…")
  )
  const load = async (): Promise<void> => {
    try {
      const page = await options.fetch()
      const rows = table<T>(options.caption, options.columns, page.data, options.empty)
      if (options.pageHref === undefined) element.replaceChildren(rows)
      else element.replaceChildren(rows, pager(page.meta, options.pageHref) ?? "")
    } catch (error) {
      element.replaceChildren(errorBox(error))
    }
  }
  return { element, load }
}

/** Puts `text` on the clipboard; where the page may not (not a secure context), copies `select()`'s selection. */
const copyText = async (text: string, select: () => void): Promise<void> => {
  if (navigator.clipboard !== undefined && window.isSecureContext) {
    await navigator.clipboard.writeText(text)
    return
  }
  select()
  if (!document.execCommand("copy"))
    throw new Error("Copying is not allowed here: select the text and copy it yourself.")
}

const copy = (value: HTMLInputElement): Promise<void> => copyText(value.value, () => value.select())

/**
 * An id as a record's page shows it, with a Copy button beside it (named "Copy <what> id"; focus stays on it) and a
 * status line that says "Copied".
 */
export const copyableId = (what: string, id: string): HTMLElement => {
  const code = h("code", null, id)
  const status = h("span", { class: "copy-note", role: "status" })
  const button = h(
    "button",
    {
      type: "button",
      class: "copy-id",
      "aria-label": `Copy ${what} id`,
      onclick: () => {
        status.textContent = ""
        copyText(id, () => {
          const range = document.createRange()
          range.selectNodeContents(code)
          const selection = getSelection()
          selection?.removeAllRanges()
          selection?.addRange(range)
        }).then(
          () => (status.textContent = "Copied"),
          (error: unknown) => (status.textContent = messageOf(error))
        )
      }
    },
    "Copy"
  )
  return h("span", { class: "copyable" }, code, button, status)
}

/** A secret shown this once, with a copy button; "Done" removes it from the page for good. */
export const secretOnce = (options: {
  readonly title: string
  readonly label: string
  readonly value: string
}): HTMLElement => {
  const id = uid("secret")
  const status = h("span", { class: "copy-status", role: "status" })
  const valueInput = h("input", {
    id,
    class: "secret-value",
    readonly: true,
    value: options.value,
    spellcheck: "false",
    autocomplete: "off"
  })
  const panel: HTMLElement = h(
    "section",
    { class: "secret-once", "aria-labelledby": `${id}-title` },
    h("h2", { id: `${id}-title` }, options.title),
    h("p", null, h("strong", null, "Copy it now: it will not be shown again.")),
    h("label", { for: id }, options.label),
    h(
      "div",
      { class: "secret-row" },
      valueInput,
      h(
        "button",
        {
          type: "button",
          class: "primary",
          onclick: () => {
            copy(valueInput).then(
              () => (status.textContent = "Copied to the clipboard."),
              (error: unknown) => (status.textContent = messageOf(error))
            )
          }
        },
        "Copy"
      )
    ),
    status,
    h("div", { class: "actions" }, h("button", { type: "button", onclick: () => panel.remove() }, "Done"))
  )
  // Shown once: focus goes to it as soon as the page shows it, so its Copy is the next Tab.
  requestAnimationFrame(() => {
    if (!valueInput.isConnected) return
    valueInput.focus()
    valueInput.select()
  })
  return panel
}
