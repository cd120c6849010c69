import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Idempotent } from "../Contract/Idempotency.js"
import { makeWithLinks } from "../Contract/Links.js"
import { decodePayload } from "../Contract/Request.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import { CreateInvitation, CreateTeam, UpdateMember, UpdateTeam } from "./Api.js"
import { Invitations } from "./Invitations.js"
import { Teams } from "./Teams.js"

export const TeamsHttp = HttpApiBuilder.group(Api, "teams", (handlers) =>
  Effect.gen(function* () {
    const withLinks = yield* makeWithLinks
    const teams = yield* Teams
    const invitations = yield* Invitations
    const idempotent = yield* Idempotent
    return handlers
      .handle("list", ({ urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) => teams.listMine(me, urlParams)),
          Effect.flatMap(withLinks)
        )
      )
      .handleRaw("create", ({ request }) =>
        idempotent.withPayload(request, CreateTeam, (payload) =>
          Effect.flatMap(CurrentPrincipal, (me) => teams.create({ name: payload.name, ownerId: me.userId }))
        )
      )
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (me) => teams.get(me, path.team_id)))
      .handleRaw("update", ({ path }) =>
        Effect.flatMap(decodePayload(UpdateTeam), (payload) =>
          Effect.flatMap(CurrentPrincipal, (me) => teams.rename(me, path.team_id, payload.name))
        )
      )
      .handle("delete", ({ path }) => Effect.flatMap(CurrentPrincipal, (me) => teams.remove(me, path.team_id)))
      .handle("members", ({ path, urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) => teams.members(me, path.team_id, urlParams)),
          Effect.flatMap(withLinks)
        )
      )
      .handleRaw("updateMember", ({ path }) =>
        Effect.flatMap(decodePayload(UpdateMember), (payload) =>
          Effect.flatMap(CurrentPrincipal, (me) => teams.setRole(me, path.team_id, path.user_id, payload.role))
        )
      )
      .handle("removeMember", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (me) => teams.removeMember(me, path.team_id, path.user_id))
      )
      .handleRaw("invite", ({ path, request }) =>
        idempotent.withPayload(request, CreateInvitation, (payload) =>
          Effect.flatMap(CurrentPrincipal, (me) => invitations.create(me, path.team_id, payload))
        )
      )
      .handle("invitations", ({ path, urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) => invitations.listForTeam(me, path.team_id, urlParams)),
          Effect.flatMap(withLinks)
        )
      )
      .handle("revokeInvitation", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (me) => invitations.revoke(me, path.team_id, path.invitation_id))
      )
  })
)

export const InvitationsHttp = HttpApiBuilder.group(Api, "invitations", (handlers) =>
  Effect.gen(function* () {
    const withLinks = yield* makeWithLinks
    const invitations = yield* Invitations
    const idempotent = yield* Idempotent
    return handlers
      .handle("list", ({ urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) => invitations.listMine(me, urlParams)),
          Effect.flatMap(withLinks)
        )
      )
      .handleRaw("accept", ({ path, request }) =>
        idempotent.action(
          request,
          Effect.flatMap(CurrentPrincipal, (me) => invitations.accept(me, path.invitation_id))
        )
      )
      .handleRaw("decline", ({ path, request }) =>
        idempotent.action(
          request,
          Effect.flatMap(CurrentPrincipal, (me) => invitations.decline(me, path.invitation_id))
        )
      )
  })
)
