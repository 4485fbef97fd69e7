using System.Net;
using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace CosmosInterop.Suite;

/// <summary>Point operations, patch, transactional batch, bulk, TTL, session tokens and 429 retries.</summary>
internal static class ItemChecks
{
    private static JObject Doc(string id, string pk, int n = 0) => new() { ["id"] = id, ["pk"] = pk, ["n"] = n };

    public static async Task Run(CheckRunner run, CosmosClient client, ClientConfig config, string prefix)
    {
        Database db = await client.CreateDatabaseIfNotExistsAsync($"{prefix}-main");
        Container c = await db.CreateContainerIfNotExistsAsync(new ContainerProperties("items", "/pk") { DefaultTimeToLive = -1 }, 12_000);

        await run.Run("items: create/read/replace/upsert/delete, 404 and 409", async () =>
        {
            ItemResponse<JObject> created = await c.CreateItemAsync(Doc("a", "p1", 1), new PartitionKey("p1"));
            Expect.Equal(HttpStatusCode.Created, created.StatusCode, "create");
            Expect.True(created.ETag is { Length: > 0 } && created.ETag == (string?)created.Resource["_etag"], "etag header = _etag");
            Expect.True(created.RequestCharge > 0, "request charge");
            await Expect.Status(HttpStatusCode.Conflict, () => c.CreateItemAsync(Doc("a", "p1"), new PartitionKey("p1")), "create twice");
            ItemResponse<JObject> read = await c.ReadItemAsync<JObject>("a", new PartitionKey("p1"));
            Expect.Equal(1, (int)read.Resource["n"]!, "read");
            await Expect.Status(HttpStatusCode.NotFound, () => c.ReadItemAsync<JObject>("a", new PartitionKey("other")), "read with another key");
            ItemResponse<JObject> replaced = await c.ReplaceItemAsync(Doc("a", "p1", 2), "a", new PartitionKey("p1"));
            Expect.Equal(HttpStatusCode.OK, replaced.StatusCode, "replace");
            ItemResponse<JObject> upsertNew = await c.UpsertItemAsync(Doc("b", "p1"), new PartitionKey("p1"));
            Expect.Equal(HttpStatusCode.Created, upsertNew.StatusCode, "upsert new");
            ItemResponse<JObject> upsertOld = await c.UpsertItemAsync(Doc("b", "p1", 5), new PartitionKey("p1"));
            Expect.Equal(HttpStatusCode.OK, upsertOld.StatusCode, "upsert existing");
            ItemResponse<JObject> deleted = await c.DeleteItemAsync<JObject>("b", new PartitionKey("p1"));
            Expect.Equal(HttpStatusCode.NoContent, deleted.StatusCode, "delete");
            await Expect.Status(HttpStatusCode.NotFound, () => c.DeleteItemAsync<JObject>("b", new PartitionKey("p1")), "delete twice");
        });

        await run.Run("items: If-Match (412 when stale), If-None-Match (304)", async () =>
        {
            ItemResponse<JObject> v1 = await c.CreateItemAsync(Doc("etag", "p1"), new PartitionKey("p1"));
            ItemResponse<JObject> v2 = await c.ReplaceItemAsync(Doc("etag", "p1", 2), "etag", new PartitionKey("p1"),
                new ItemRequestOptions { IfMatchEtag = v1.ETag });
            Expect.True(v2.ETag != v1.ETag, "new etag");
            await Expect.Status(HttpStatusCode.PreconditionFailed, () => c.ReplaceItemAsync(Doc("etag", "p1", 3), "etag",
                new PartitionKey("p1"), new ItemRequestOptions { IfMatchEtag = v1.ETag }), "replace with stale etag");
            await Expect.Status(HttpStatusCode.PreconditionFailed, () => c.DeleteItemAsync<JObject>("etag",
                new PartitionKey("p1"), new ItemRequestOptions { IfMatchEtag = v1.ETag }), "delete with stale etag");
            await Expect.Status(HttpStatusCode.PreconditionFailed, () => c.UpsertItemAsync(Doc("etag", "p1", 4),
                new PartitionKey("p1"), new ItemRequestOptions { IfMatchEtag = v1.ETag }), "upsert with stale etag");
            using ResponseMessage notModified = await c.ReadItemStreamAsync("etag", new PartitionKey("p1"),
                new ItemRequestOptions { IfNoneMatchEtag = v2.ETag });
            Expect.Equal(HttpStatusCode.NotModified, notModified.StatusCode, "read with current etag");
        });

        await run.Run("items: stream API and content-response-off (Prefer: return=minimal)", async () =>
        {
            using var body = new MemoryStream(System.Text.Encoding.UTF8.GetBytes("{\"id\":\"s\",\"pk\":\"p2\",\"v\":\"x\"}"));
            using ResponseMessage created = await c.CreateItemStreamAsync(body, new PartitionKey("p2"));
            Expect.Equal(HttpStatusCode.Created, created.StatusCode, "create stream");
            using ResponseMessage read = await c.ReadItemStreamAsync("s", new PartitionKey("p2"));
            Expect.Equal(HttpStatusCode.OK, read.StatusCode, "read stream");
            using ResponseMessage missing = await c.ReadItemStreamAsync("nope", new PartitionKey("p2"));
            Expect.Equal(HttpStatusCode.NotFound, missing.StatusCode, "missing (no exception)");
            ItemResponse<JObject> minimal = await c.CreateItemAsync(Doc("min", "p2"), new PartitionKey("p2"),
                new ItemRequestOptions { EnableContentResponseOnWrite = false });
            Expect.True(minimal.Resource is null, "no body with content response off");
            Expect.True(minimal.ETag is { Length: > 0 }, "etag still given");
        });

        await run.Run("items: read many across partitions", async () =>
        {
            var keys = new List<(string, PartitionKey)>();
            for (int i = 0; i < 20; i++)
            {
                await c.CreateItemAsync(Doc($"rm{i}", $"rmp{i % 7}", i), new PartitionKey($"rmp{i % 7}"));
                if (i % 2 == 0) keys.Add(($"rm{i}", new PartitionKey($"rmp{i % 7}")));
            }
            keys.Add(("absent", new PartitionKey("rmp1")));
            FeedResponse<JObject> many = await c.ReadManyItemsAsync<JObject>(keys);
            Expect.Sequence(Enumerable.Range(0, 10).Select(i => $"rm{2 * i}").OrderBy(x => x),
                many.Select(d => (string)d["id"]!).OrderBy(x => x), "items found");
        });

        await run.Run("patch: set/add/incr/remove/replace/move and a false condition (412)", async () =>
        {
            await c.CreateItemAsync(new JObject { ["id"] = "pt", ["pk"] = "p3", ["n"] = 1, ["state"] = "open", ["old"] = "x", ["tags"] = new JArray("a") },
                new PartitionKey("p3"));
            ItemResponse<JObject> patched = await c.PatchItemAsync<JObject>("pt", new PartitionKey("p3"),
            [
                PatchOperation.Set("/s", "v"),
                PatchOperation.Add("/tags/-", "b"),
                PatchOperation.Increment("/n", 5),
                PatchOperation.Remove("/old"),
                PatchOperation.Replace("/state", "closed"),
                PatchOperation.Move("/s", "/moved"),
            ]);
            JObject d = patched.Resource;
            Expect.Equal(6, (int)d["n"]!, "incr");
            Expect.Equal("closed", (string)d["state"]!, "replace");
            Expect.True(d["old"] is null && d["s"] is null, "removed and moved away");
            Expect.Equal("v", (string)d["moved"]!, "moved");
            Expect.Sequence(["a", "b"], d["tags"]!.Select(t => (string)t!), "appended");
            await Expect.Status(HttpStatusCode.PreconditionFailed, () => c.PatchItemAsync<JObject>("pt", new PartitionKey("p3"),
                [PatchOperation.Set("/x", 1)], new PatchItemRequestOptions { FilterPredicate = "FROM c WHERE c.state = 'open'" }),
                "false condition");
            await Expect.Status(HttpStatusCode.BadRequest, () => c.PatchItemAsync<JObject>("pt", new PartitionKey("p3"),
                [PatchOperation.Set("/pk", "other")]), "patching the partition key");
        });

        await run.Run("transactional batch: commit, and all-or-nothing on a failure", async () =>
        {
            await c.CreateItemAsync(Doc("tb0", "tb"), new PartitionKey("tb"));
            using (TransactionalBatchResponse ok = await c.CreateTransactionalBatch(new PartitionKey("tb"))
                .CreateItem(Doc("tb1", "tb", 1))
                .UpsertItem(Doc("tb2", "tb", 2))
                .ReplaceItem("tb0", Doc("tb0", "tb", 10))
                .ReadItem("tb1")
                .PatchItem("tb2", [PatchOperation.Increment("/n", 1)])
                .ExecuteAsync())
            {
                Expect.True(ok.IsSuccessStatusCode, $"batch status {ok.StatusCode} {ok.ErrorMessage}");
                Expect.Equal(5, ok.Count, "results");
                Expect.Equal(HttpStatusCode.Created, ok[0].StatusCode, "create result");
                Expect.Equal(1, (int)ok.GetOperationResultAtIndex<JObject>(3).Resource["n"]!, "read result");
                Expect.Equal(3, (int)ok.GetOperationResultAtIndex<JObject>(4).Resource["n"]!, "patch result");
            }
            using (TransactionalBatchResponse failed = await c.CreateTransactionalBatch(new PartitionKey("tb"))
                .CreateItem(Doc("tb3", "tb"))
                .CreateItem(Doc("tb1", "tb"))
                .ExecuteAsync())
            {
                Expect.Equal(HttpStatusCode.Conflict, failed.StatusCode, "batch status");
                Expect.Equal(HttpStatusCode.FailedDependency, failed[0].StatusCode, "other operation");
                Expect.Equal(HttpStatusCode.Conflict, failed[1].StatusCode, "failing operation");
            }
            await Expect.Status(HttpStatusCode.NotFound, () => c.ReadItemAsync<JObject>("tb3", new PartitionKey("tb")), "nothing committed");
        });

        await run.Run("bulk (AllowBulkExecution): 300 concurrent creates over 2 ranges", async () =>
        {
            using CosmosClient bulk = Clients.Create(new ClientConfig { Endpoint = config.Endpoint, Key = config.Key, ConnectTo = config.ConnectTo, Bulk = true });
            Container bc = bulk.GetContainer(db.Id, "items");
            var tasks = Enumerable.Range(0, 300).Select(i => bc.CreateItemAsync(Doc($"bulk{i}", $"bk{i % 50}", i), new PartitionKey($"bk{i % 50}"))).ToList();
            ItemResponse<JObject>[] results = await Task.WhenAll(tasks);
            Expect.True(results.All(r => r.StatusCode == HttpStatusCode.Created), "every create 201");
            var dup = await Task.WhenAll(Enumerable.Range(0, 5).Select(async i =>
            {
                try { await bc.CreateItemAsync(Doc($"bulk{i}", $"bk{i % 50}"), new PartitionKey($"bk{i % 50}")); return 0; }
                catch (CosmosException e) { return (int)e.StatusCode; }
            }));
            Expect.True(dup.All(s => s == 409), $"duplicates refused one by one ({string.Join(",", dup)})");
            int count = 0;
            using FeedIterator<int> it = c.GetItemQueryIterator<int>("SELECT VALUE COUNT(1) FROM c WHERE STARTSWITH(c.id, 'bulk')");
            while (it.HasMoreResults) count += (await it.ReadNextAsync()).Sum();
            Expect.Equal(300, count, "documents written");
        });

        await run.Run("TTL: container default and per-item ttl expire documents", async () =>
        {
            Container t = await db.CreateContainerAsync(new ContainerProperties("ttl", "/pk") { DefaultTimeToLive = 1 });
            await t.CreateItemAsync(Doc("gone", "t"), new PartitionKey("t"));
            await t.CreateItemAsync(new JObject { ["id"] = "kept", ["pk"] = "t", ["ttl"] = -1 }, new PartitionKey("t"));
            await t.CreateItemAsync(new JObject { ["id"] = "later", ["pk"] = "t", ["ttl"] = 3600 }, new PartitionKey("t"));
            await Task.Delay(2_500);
            await Expect.Status(HttpStatusCode.NotFound, () => t.ReadItemAsync<JObject>("gone", new PartitionKey("t")), "expired");
            await t.ReadItemAsync<JObject>("kept", new PartitionKey("t"));
            await t.ReadItemAsync<JObject>("later", new PartitionKey("t"));
            await t.DeleteContainerAsync();
        });

        await run.Run("session consistency: a write's session token reads it back on another client", async () =>
        {
            ItemResponse<JObject> w = await c.CreateItemAsync(Doc("sess", "p4"), new PartitionKey("p4"));
            Expect.True(!string.IsNullOrEmpty(w.Headers.Session), "session token on the write");
            using CosmosClient other = Clients.Create(new ClientConfig { Endpoint = config.Endpoint, Key = config.Key, ConnectTo = config.ConnectTo, Consistency = "Session" });
            ItemResponse<JObject> r = await other.GetContainer(db.Id, "items").ReadItemAsync<JObject>("sess", new PartitionKey("p4"),
                new ItemRequestOptions { SessionToken = w.Headers.Session });
            Expect.Equal(HttpStatusCode.OK, r.StatusCode, "read with the token");
            Expect.True(!string.IsNullOrEmpty(r.Headers.Session), "session token on the read");
        });

        await run.Run("429: throttled requests are retried by the SDK (and surface with retries off)", async () =>
        {
            Container slow = await db.CreateContainerAsync(new ContainerProperties("slow", "/pk"), throughput: 400);
            string big = new('x', 4000);
            // ~1.7 MiB: one write costs ~1,070 RU, far past the second's 400, so the next request is throttled
            // however slowly this machine sends it (the debt takes ~1.7 s to repay) — not a race against the rate.
            string huge = new('x', 1_800_000);
            using CosmosClient noRetry = Clients.Create(new ClientConfig { Endpoint = config.Endpoint, Key = config.Key, ConnectTo = config.ConnectTo, MaxRetryOn429 = 0 });
            Container slowNoRetry = noRetry.GetContainer(db.Id, "slow");
            int throttled = 0;
            for (int i = 0; i < 200 && throttled == 0; i++)
            {
                try { await slowNoRetry.CreateItemAsync(new JObject { ["id"] = $"x{i}", ["pk"] = "s", ["big"] = huge }, new PartitionKey("s")); }
                catch (CosmosException e) when (e.StatusCode == HttpStatusCode.TooManyRequests)
                {
                    throttled++;
                    Expect.True(e.RetryAfter is { TotalMilliseconds: > 0 }, "retry-after given");
                }
            }
            Expect.True(throttled > 0, "a 429 reached the client with retries off");
            ItemResponse<JObject>[] all = await Task.WhenAll(Enumerable.Range(0, 60).Select(i =>
                slow.CreateItemAsync(new JObject { ["id"] = $"y{i}", ["pk"] = "s", ["big"] = big }, new PartitionKey("s"))));
            Expect.True(all.All(r => r.StatusCode == HttpStatusCode.Created), "all created with the SDK's retries");
            await slow.DeleteContainerAsync();
        });
    }
}
