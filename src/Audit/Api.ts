import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { ParseResult, Schema } from "effect"
import { CursorList, List } from "../Contract/Envelope.js"
import { withParamErrors } from "../Contract/Errors.js"
import { PageNumber, PerPage } from "../Contract/ListParams.js"
import { Authentication, RequiredScopes } from "../Contract/Security.js"
import { AuditAction, AuditRecord, auditActions } from "../Domain/Audit.js"
import { ApiErrors } from "../Domain/Errors.js"
import { AuditId, TeamId, UserId } from "../Domain/Ids.js"
import { optional } from "../Domain/Payload.js"
import { InstantCeilFromString, InstantFromString } from "../Domain/Time.js"

const isAction = Schema.is(AuditAction)

/** `action`: one action, or several separated by commas; each must be one the audit log records. */
export const AuditActionFilter = Schema.transformOrFail(Schema.String, Schema.Array(AuditAction), {
  strict: true,
  decode: (input, _, ast) => {
    const asked = input.split(",").map((name) => name.trim())
    const unknown = asked.filter((name) => !isAction(name))
    if (unknown.length === 0) return ParseResult.succeed(Array.from(new Set(asked.filter(isAction))))
    const shown = unknown.map((name) => (name === "" ? "an empty name" : JSON.stringify(name))).join(", ")
    return ParseResult.fail(
      new ParseResult.Type(ast, input, `has ${shown}: must be one or more audit actions, separated by commas`)
    )
  },
  encode: (actions) => ParseResult.succeed(actions.join(","))
}).annotations({
  description: `One action, or several separated by commas: ${auditActions.join(", ")}`
})

/**
 * An audit log's query: newest first always; filters by action, actor and creation time. With `after` (a cursor:
 * the records after that one, oldest first) only `per_page`, `action` and `actor_id` apply.
 */
export const AuditListParams = Schema.Struct({
  after: optional(
    AuditId.annotations({
      description:
        "An audit record id: the records of this log that follow it in the log's sequence (the order in which they " +
        "became visible), oldest first; pass the last id of each page to the next. Not with page, created_after or " +
        "created_before. 404 when it is not a record of this log, 410 cursor_expired when retention has removed it"
    })
  ),
  page: optional(PageNumber),
  per_page: Schema.optionalWith(PerPage, { default: () => 20, exact: true }),
  action: optional(AuditActionFilter),
  actor_id: optional(UserId),
  created_after: optional(InstantFromString),
  created_before: optional(InstantCeilFromString)
})

const teamId = HttpApiSchema.param("team_id", TeamId)

/** The audit logs: read-only (nothing changes or deletes a record through the API). */
export class AuditApi extends HttpApiGroup.make("audit")
  .annotate(OpenApi.Description, "Audit logs: who did what, and from where (read-only)")
  .add(
    HttpApiEndpoint.get("teamLog")`/teams/${teamId}/audit-log`
      .setUrlParams(AuditListParams)
      .addSuccess(Schema.Union(List(AuditRecord), CursorList(AuditRecord)))
      .pipe(withParamErrors)
      .addError(ApiErrors.CursorExpired)
      .annotate(RequiredScopes, ["read", "team:manage"])
      .annotate(
        OpenApi.Summary,
        "A team's audit log, newest first (team owners and admins only; filters: action, actor_id, " +
          "created_after, created_before); or, with after, the records that follow that one, oldest first"
      )
  )
  .add(
    HttpApiEndpoint.get("myLog")`/users/me/audit-log`
      .setUrlParams(AuditListParams)
      .addSuccess(Schema.Union(List(AuditRecord), CursorList(AuditRecord)))
      .pipe(withParamErrors)
      .addError(ApiErrors.CursorExpired)
      .annotate(RequiredScopes, ["read"])
      .annotate(
        OpenApi.Summary,
        "Your security log: the records you made and those about what is yours, newest first (filters: action, " +
          "actor_id, created_after, created_before); or, with after, the records that follow that one, oldest first"
      )
  )
  .middleware(Authentication) {}
