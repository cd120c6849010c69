/**
 * The API reference page, rendered here from the OpenAPI document as plain HTML: no script, no font, no request
 * after the page itself, so it is readable at once, offline, and on a small screen. Sections are the document's
 * tags (their names and descriptions come from the contract's annotations, src/Api.ts); each operation shows its
 * parameters, a request body example and the `curl` command that sends it, and its responses.
 *
 * The request body examples come from the schemas: a schema's `examples` annotation when it has one, otherwise one
 * built from its required properties. `examplesOf` is what the page shows, so a test can send each one as shown.
 */

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }
type JsonObject = { readonly [key: string]: Json }

const isObject = (value: unknown): value is JsonObject =>
  value !== null && typeof value === "object" && !Array.isArray(value)

const field = (value: unknown, key: string): Json | undefined => (isObject(value) ? value[key] : undefined)
const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)
const list = (value: unknown): ReadonlyArray<Json> => (Array.isArray(value) ? value : [])

/** What the page needs of the document: kept loose, the document is built by `OpenApi.ts`. */
export interface ReferenceDocument {
  readonly info: { readonly title: string; readonly description?: string | undefined }
  readonly tags?: ReadonlyArray<{ readonly name: string; readonly description?: string | undefined }> | undefined
  readonly paths: object
  readonly components?: object | undefined
}

const resolve = (document: ReferenceDocument, schema: Json | undefined, seen = 0): JsonObject => {
  const ref = text(field(schema, "$ref"))
  if (ref === undefined || seen > 20) return isObject(schema) ? schema : {}
  const name = ref.replace("#/components/schemas/", "")
  return resolve(document, field(field(document.components, "schemas"), name), seen + 1)
}

const sampleString = (schema: JsonObject): string => {
  const format = text(schema.format)
  if (format === "uri" || format === "url") return "https://example.com/hooks"
  if (format === "email") return "ada@example.com"
  if (format === "date-time") return "2030-01-01T00:00:00.000Z"
  const minLength = typeof schema.minLength === "number" ? schema.minLength : 0
  return "Example".padEnd(minLength, "x")
}

/** An example value of a schema: its own example, default, first enum value, or one built from its parts. */
export const sample = (document: ReferenceDocument, input: Json | undefined, depth = 0): Json => {
  const schema = resolve(document, input)
  const examples = list(schema.examples)
  if (examples.length > 0) return examples[0] ?? null
  if (schema.default !== undefined) return schema.default
  if (schema.const !== undefined) return schema.const
  const enumerated = list(schema.enum)
  if (enumerated.length > 0) return enumerated[0] ?? null
  const alternatives = [...list(schema.anyOf), ...list(schema.oneOf)].filter(
    (alternative) => resolve(document, alternative).type !== "null"
  )
  if (alternatives.length > 0) return sample(document, alternatives[0], depth + 1)
  const types = Array.isArray(schema.type) ? schema.type.filter((type) => type !== "null") : [schema.type]
  const type = text(types[0]) ?? (isObject(schema.properties) ? "object" : undefined)
  if (depth > 8) return null
  switch (type) {
    case "object": {
      const properties = isObject(schema.properties) ? schema.properties : {}
      const required = list(schema.required).flatMap((name) => (typeof name === "string" ? [name] : []))
      return Object.fromEntries(required.map((name) => [name, sample(document, properties[name], depth + 1)]))
    }
    case "array": {
      const minItems = typeof schema.minItems === "number" ? schema.minItems : 0
      return minItems > 0 ? [sample(document, schema.items, depth + 1)] : []
    }
    case "string":
      return sampleString(schema)
    case "integer":
    case "number":
      return typeof schema.minimum === "number" ? schema.minimum : 1
    case "boolean":
      return true
    default:
      return null
  }
}

const methods = ["get", "post", "put", "patch", "delete"] as const

interface Operation {
  readonly method: (typeof methods)[number]
  readonly path: string
  readonly operation: JsonObject
}

const operationsOf = (document: ReferenceDocument): ReadonlyArray<Operation> =>
  Object.entries(document.paths).flatMap(([path, item]: [string, unknown]) =>
    methods.flatMap((method) => {
      const operation = field(item, method)
      return isObject(operation) ? [{ method, path, operation }] : []
    })
  )

export interface Example {
  readonly method: string
  readonly path: string
  readonly contentType: string
  /** The body as the page shows it. */
  readonly body: string
}

/** The request body example of an operation, exactly as the page shows it. */
const exampleOf = (document: ReferenceDocument, { method, path, operation }: Operation): Example | undefined => {
  const content = field(field(operation, "requestBody"), "content")
  if (!isObject(content)) return undefined
  const json = field(content, "application/json")
  if (json !== undefined) {
    const given = list(field(json, "examples")).length > 0 ? undefined : field(json, "example")
    const value = given ?? sample(document, field(json, "schema"))
    return { method: method.toUpperCase(), path, contentType: "application/json", body: JSON.stringify(value, null, 2) }
  }
  const form = field(content, "application/x-www-form-urlencoded")
  if (form === undefined) return undefined
  const value = sample(document, field(form, "schema"))
  const body = new URLSearchParams(
    Object.entries(isObject(value) ? value : {}).map(([key, item]) => [key, String(item)])
  ).toString()
  return { method: method.toUpperCase(), path, contentType: "application/x-www-form-urlencoded", body }
}

/** Every request body example the page shows. */
export const examplesOf = (document: ReferenceDocument): ReadonlyArray<Example> =>
  operationsOf(document).flatMap((operation) => {
    const example = exampleOf(document, operation)
    return example === undefined ? [] : [example]
  })

export const escapeHtml = (value: string) =>
  value.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

/** The few Markdown marks the descriptions use: `code`. */
const inline = (value: string) => escapeHtml(value).replace(/`([^`]+)`/g, "<code>$1</code>")

const slug = (value: string) =>
  value
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "")

const shellQuote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`

const curlOf = (baseUrl: string, { method, path, operation }: Operation, example: Example | undefined) => {
  const secured = list(operation.security).length > 0
  const lines = [`curl -X ${method.toUpperCase()} "${baseUrl}${path}"`]
  if (secured) lines.push(`-H "Authorization: Bearer $API_KEY"`)
  if (example !== undefined) {
    lines.push(`-H "Content-Type: ${example.contentType}"`)
    lines.push(`--data ${shellQuote(example.body)}`)
  }
  return lines.join(" \\\n  ")
}

const parametersOf = (document: ReferenceDocument, operation: JsonObject) => {
  const parameters = list(operation.parameters).map((parameter) => resolve(document, parameter))
  if (parameters.length === 0) return ""
  const items = parameters
    .map((parameter) => {
      const name = text(parameter.name) ?? ""
      const where = text(parameter.in) ?? ""
      const required = parameter.required === true ? `<span class="required">required</span>` : "optional"
      const choices = list(resolve(document, parameter.schema).enum).map((value) => `\`${String(value)}\``)
      const description = [
        text(parameter.description) ?? text(field(parameter.schema, "description")) ?? "",
        choices.length > 0 ? `One of ${choices.join(", ")}.` : ""
      ]
        .filter((part) => part !== "")
        .join(" ")
      return `<dt><code>${escapeHtml(name)}</code> <span class="where">${escapeHtml(where)}, ${required}</span></dt><dd>${inline(description)}</dd>`
    })
    .join("")
  return `<h4>Parameters</h4><dl class="parameters">${items}</dl>`
}

const responsesOf = (operation: JsonObject) => {
  const responses = isObject(operation.responses) ? Object.entries(operation.responses) : []
  const items = responses
    .map(
      ([status, response]) =>
        `<li><span class="status status-${escapeHtml(status.slice(0, 1))}">${escapeHtml(status)}</span> ${inline(
          text(field(response, "description")) ?? ""
        )}</li>`
    )
    .join("")
  return `<h4>Responses</h4><ul class="responses">${items}</ul>`
}

const styles = `
:root { color-scheme: light dark; --fg: #1f2328; --muted: #57606a; --bg: #ffffff; --panel: #f6f8fa; --line: #d0d7de; --link: #0550ae; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9da7b3; --bg: #0d1117; --panel: #161b22; --line: #30363d; --link: #79c0ff; } }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--link); }
a:focus-visible { outline: 3px solid var(--link); outline-offset: 2px; }
.layout { display: grid; grid-template-columns: minmax(0, 16rem) minmax(0, 1fr); gap: 2rem; max-width: 80rem; margin: 0 auto; padding: 1rem; }
nav { position: sticky; top: 0; align-self: start; max-height: 100vh; overflow-y: auto; padding-top: 1rem; }
nav ul { list-style: none; margin: 0; padding: 0; }
nav li { margin: 0.25rem 0; }
main { min-width: 0; }
h1 { margin-top: 1rem; }
h2 { margin-top: 3rem; border-bottom: 1px solid var(--line); padding-bottom: 0.25rem; }
h3 { margin: 2rem 0 0.25rem; }
h4 { margin: 1rem 0 0.25rem; font-size: 1rem; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.875rem; }
code { overflow-wrap: anywhere; }
pre { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 0.75rem; white-space: pre-wrap; overflow-wrap: anywhere; }
.endpoint { font-weight: 600; }
.method { display: inline-block; min-width: 4rem; }
.muted, .where { color: var(--muted); }
.required { color: inherit; font-weight: 600; }
dl.parameters dt { margin-top: 0.5rem; }
dl.parameters dd { margin-left: 1rem; }
ul.responses { padding-left: 1.25rem; }
.status { font-family: ui-monospace, monospace; font-weight: 600; }
@media (max-width: 50rem) {
  .layout { display: block; }
  nav { position: static; max-height: none; }
  nav ul { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; }
}
`

/** The whole page, for the server at `baseUrl`. */
export const renderReference = (document: ReferenceDocument, baseUrl: string): string => {
  const operations = operationsOf(document)
  const tags = (document.tags ?? []).filter((tag) =>
    operations.some(({ operation }) => list(operation.tags).includes(tag.name))
  )
  const sections = tags
    .map((tag) => {
      const items = operations
        .filter(({ operation }) => list(operation.tags).includes(tag.name))
        .map((entry) => {
          const { method, path, operation } = entry
          const summary = text(operation.summary) ?? `${method.toUpperCase()} ${path}`
          const id = slug(text(operation.operationId) ?? `${method}-${path}`)
          const description = text(operation.description)
          const example = exampleOf(document, entry)
          const body =
            example === undefined
              ? ""
              : `<h4>Request body example</h4><pre data-example="${escapeHtml(`${example.method} ${path}`)}"><code>${escapeHtml(example.body)}</code></pre>`
          return `<section id="${id}" aria-labelledby="${id}-title">
<h3 id="${id}-title">${inline(summary)}</h3>
<p class="endpoint"><code><span class="method">${method.toUpperCase()}</span> ${escapeHtml(path)}</code></p>
${description === undefined ? "" : `<p>${inline(description)}</p>`}
${parametersOf(document, operation)}
${body}
<h4>With curl</h4><pre><code>${escapeHtml(curlOf(baseUrl, entry, example))}</code></pre>
${responsesOf(operation)}
</section>`
        })
        .join("\n")
      return `<section id="${slug(tag.name)}" aria-labelledby="${slug(tag.name)}-title">
<h2 id="${slug(tag.name)}-title">${escapeHtml(tag.name)}</h2>
${tag.description === undefined ? "" : `<p class="muted">${inline(tag.description)}</p>`}
${items}
</section>`
    })
    .join("\n")
  const nav = tags.map((tag) => `<li><a href="#${slug(tag.name)}">${escapeHtml(tag.name)}</a></li>`).join("")
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <link rel="icon" href="data:," />
    <title>${escapeHtml(document.info.title)}</title>
    <meta name="description" content="${escapeHtml(document.info.description ?? "")}" />
    <style>${styles}</style>
  </head>
  <body>
    <div class="layout">
      <nav aria-label="Sections"><ul>${nav}</ul></nav>
      <main>
        <h1>${escapeHtml(document.info.title)}</h1>
        <p>${inline(document.info.description ?? "")}</p>
        <p>Base URL: <code>${escapeHtml(baseUrl)}</code>. Send an API key (or an OAuth access token) as
        <code>Authorization: Bearer $API_KEY</code>. The OpenAPI document: <a href="/v1/openapi.json">/v1/openapi.json</a>.</p>
        ${sections}
      </main>
    </div>
  </body>
</html>
`
}
