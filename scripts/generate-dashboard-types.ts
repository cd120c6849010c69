/**
 * The dashboard's types, generated from the service's own OpenAPI document (src/Http/OpenApi.ts, made here in
 * process: no server) by `openapi-typescript`, into `dashboard/generated/api.ts`, which is checked in. The dashboard
 * calls the API through `openapi-fetch`'s `createClient<paths>` (dashboard/api.ts), so a call that does not fit the
 * contract does not type-check.
 *
 *   bun run generate:dashboard-types   writes the file
 *   bun run check:dashboard-types      exits 1 when the file is not what the contract generates now (CI runs it;
 *                                      test/dashboard/generated-types.test.ts checks the same)
 */
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import openapiTS, { astToString } from "openapi-typescript"
import { openApiDocument } from "../src/Http/OpenApi.ts"

export const GENERATED = join(import.meta.dir, "..", "dashboard", "generated", "api.ts")

const HEADER = `/**
 * Generated from the service's OpenAPI document by scripts/generate-dashboard-types.ts: do not edit.
 * Regenerate with \`bun run generate:dashboard-types\` after changing the contract (CI checks it is current).
 */
`

/** The document as the contract makes it now (the address in it does not reach the types). */
export const currentDocument = (): unknown =>
  openApiDocument({ baseUrl: "http://localhost", authUrl: "http://localhost/oauth" })

/** The generated module for a document. */
export const generate = async (document: unknown = currentDocument()): Promise<string> => {
  const ast = await openapiTS(JSON.stringify(document), { silent: true })
  return `${HEADER}\n${astToString(ast)}`
}

if (import.meta.main) {
  const generated = await generate()
  if (process.argv.includes("--check")) {
    const current = readFileSync(GENERATED, "utf8")
    if (current !== generated) {
      console.error(
        "dashboard/generated/api.ts is not what the contract generates: run `bun run generate:dashboard-types`"
      )
      process.exit(1)
    }
    console.log("dashboard/generated/api.ts is current")
  } else {
    writeFileSync(GENERATED, generated)
    console.log(`wrote ${GENERATED}`)
  }
}
