/**
 * containers.json's `devHostOnly` flag (the dev host's own container, which Bicep leaves out of Azure): only the
 * durable task hub's container may carry it, and only as a boolean; the app's definition marks exactly that one.
 */
import { describe, expect, it } from "vitest";
import { TASK_HUB_CONTAINER, taskHubContainerRequest } from "../../packages/devhost/src/durable/runtime.js";
import {
  containerDefinition,
  containerOf,
  containerRequestOf,
  parseContainerDefinition,
} from "../../src/shared/containers.js";

const withFlag = (role: string, value: unknown) => ({
  database: containerDefinition.database,
  containers: containerDefinition.containers.map((c) => {
    const { devHostOnly: _, ...rest } = c;
    return c.role === role ? { ...rest, devHostOnly: value } : rest;
  }),
});

describe("containers.json: devHostOnly", () => {
  it("the app's definition marks the dev host's task hub container, and nothing else", () => {
    expect(containerDefinition.containers.filter((c) => c.devHostOnly).map((c) => c.role)).toEqual([
      "durable",
    ]);
  });

  it("refuses it on a container the app uses in Azure, and a value that is not a boolean", () => {
    expect(() => parseContainerDefinition(withFlag("leases", true))).toThrow(
      "Container definition: the leases container is the app's own: only the dev host's durable task hub may be devHostOnly.",
    );
    expect(() => parseContainerDefinition(withFlag("durable", "yes"))).toThrow(
      "Container definition: containers[4].devHostOnly must be true or false (omit it for a container Azure needs too).",
    );
    expect(parseContainerDefinition(withFlag("durable", false)).containers[4]?.devHostOnly).toBe(false);
  });
});

describe("the task hub container: the dev host's own definition, the app's by role when it has one", () => {
  it("the dev host's default is what this app's containers.json defines for its durable role", () => {
    const { id: _, ...app } = containerRequestOf(containerOf("durable"));
    expect(TASK_HUB_CONTAINER).toEqual(app);
  });

  it("an app's definition of the role replaces the default; without one, the default", () => {
    const own = { partitionKey: { paths: ["/pk"] }, defaultTtl: 3600 };
    expect(taskHubContainerRequest("hub", own)).toEqual({ ...own, id: "hub" });
    expect(taskHubContainerRequest("hub")).toEqual({ ...TASK_HUB_CONTAINER, id: "hub" });
  });
});
