import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import { withLinks } from "../Contract/Links.js"
import { Teams } from "./Teams.js"

export const TeamsHttp = HttpApiBuilder.group(Api, "teams", (handlers) =>
  Effect.gen(function*() {
    const teams = yield* Teams
    return handlers
      .handle("list", ({ urlParams }) =>
        CurrentPrincipal.pipe(Effect.flatMap((me) => teams.listMine(me, urlParams)), Effect.flatMap(withLinks)))
      .handle("members", ({ path, urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) => teams.members(me, path.team_id, urlParams)),
          Effect.flatMap(withLinks)
        ))
  }))
