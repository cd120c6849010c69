/**
 * What the tests read from the HttpApi contract (src/Api.ts) itself, so a new endpoint is covered without a line in
 * them: every `GET` (conditional.test.ts: HEAD), the single-resource `GET`s (conditional.test.ts: ETag, 304;
 * platform.test.ts: what the OpenAPI document declares for them).
 */
import * as AST from "effect/SchemaAST"
import { Api } from "../../src/Api.ts"

/** Whether a success schema's `data` is one record (`Success(…)`), not an array of them (`List(…)`). */
const isOneRecord = (success: { readonly ast: AST.AST }): boolean => {
  const data = AST.getPropertySignatures(AST.encodedAST(success.ast)).find(({ name }) => name === "data")
  return data !== undefined && AST.encodedAST(data.type)._tag === "TypeLiteral"
}

/** Every `GET` endpoint of the contract, lists included, by path (`/v1/projects/:id/deployments`). */
export const allGets: ReadonlyArray<string> = Object.values(Api.groups).flatMap((group) =>
  Object.values(group.endpoints).flatMap((endpoint) => (endpoint.method === "GET" ? [endpoint.path] : []))
)

/** The contract's `GET` endpoints whose success is one record, by path (`/v1/projects/:id`). */
export const singleResourceGets: ReadonlyArray<string> = Object.values(Api.groups).flatMap((group) =>
  Object.values(group.endpoints).flatMap((endpoint) =>
    endpoint.method === "GET" && isOneRecord(endpoint.successSchema) ? [endpoint.path] : []
  )
)

/** A contract path in the OpenAPI document's form: `/v1/projects/:id` → `/v1/projects/{id}`. */
export const openApiPath = (path: string): string => path.replace(/:([a-z_]+)/g, "{$1}")
