import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { makeWithLinks } from "../Contract/Links.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import { Projects } from "./Projects.js"

export const ProjectsHttp = HttpApiBuilder.group(Api, "projects", (handlers) =>
  Effect.gen(function* () {
    const withLinks = yield* makeWithLinks
    const projects = yield* Projects
    return handlers
      .handle("list", ({ urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) => projects.list(me, urlParams)),
          Effect.flatMap(withLinks)
        )
      )
      .handle("create", ({ payload }) => Effect.flatMap(CurrentPrincipal, (me) => projects.create(me, payload)))
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (me) => projects.get(me, path.id)))
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(CurrentPrincipal, (me) => projects.update(me, path.id, payload))
      )
      .handle("delete", ({ path }) => Effect.flatMap(CurrentPrincipal, (me) => projects.remove(me, path.id)))
  })
)
