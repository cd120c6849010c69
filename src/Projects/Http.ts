import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Idempotent } from "../Contract/Idempotency.js"
import { makeWithLinks } from "../Contract/Links.js"
import { decodePayload } from "../Contract/Request.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import { CreateProject, UpdateProject } from "./Api.js"
import { Projects } from "./Projects.js"

export const ProjectsHttp = HttpApiBuilder.group(Api, "projects", (handlers) =>
  Effect.gen(function* () {
    const withLinks = yield* makeWithLinks
    const projects = yield* Projects
    const idempotent = yield* Idempotent
    return handlers
      .handle("list", ({ urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) => projects.list(me, urlParams)),
          Effect.flatMap(withLinks)
        )
      )
      .handleRaw("create", ({ request }) =>
        idempotent.withPayload(request, CreateProject, (payload) =>
          Effect.flatMap(CurrentPrincipal, (me) => projects.create(me, payload))
        )
      )
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (me) => projects.get(me, path.id)))
      .handleRaw("update", ({ path }) =>
        Effect.flatMap(decodePayload(UpdateProject), (payload) =>
          Effect.flatMap(CurrentPrincipal, (me) => projects.update(me, path.id, payload))
        )
      )
      .handle("delete", ({ path }) => Effect.flatMap(CurrentPrincipal, (me) => projects.remove(me, path.id)))
  })
)
