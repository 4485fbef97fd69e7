using System.Net;
using System.Text;
using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace CosmosInterop.Suite;

/// <summary>
/// Items as Microsoft's CosmosItemTests.cs asserts them where the service decides: ids with reserved characters,
/// PartitionKey.None, nested key paths, delete by partition key, the service's 400/404/412 answers and messages, query
/// page sizes and errors, read feed pages.
/// </summary>
internal static class ItemEmulatorChecks
{
    private static MemoryStream Json(JObject o) => new(Encoding.UTF8.GetBytes(o.ToString()));

    public static async Task Run(CheckRunner run, CosmosClient client, Database db)
    {
        Container c = await db.CreateContainerAsync(new ContainerProperties("items", "/pk"));

        await run.Run("items: an id with / # ? \\ is stored; read by it is a 404; a query finds it; replaced through RID addresses", async () =>
        {
            const string bad = "Invalid#/\\?Id";
            await c.CreateItemAsync(new JObject { ["id"] = bad, ["pk"] = "inv" }, new PartitionKey("inv"));
            await Expect.Status(HttpStatusCode.NotFound, () => c.ReadItemAsync<JObject>(bad, new PartitionKey("inv")), "read by the id");
            ContainerProperties props = await c.ReadContainerAsync();
            string[] self = props.SelfLink.Split('/');
            Container byRid = client.GetContainer(self[1], self[3]);
            var found = new List<JObject>();
            using (FeedIterator<JObject> it = c.GetItemQueryIterator<JObject>(
                "select * from t where CONTAINS(t.id, \"/\") or CONTAINS(t.id, \"#\") or CONTAINS(t.id, \"?\") or CONTAINS(t.id, \"\\\\\")"))
                while (it.HasMoreResults) found.AddRange(await it.ReadNextAsync());
            Expect.Sequence([bad], found.Select(f => (string)f["id"]!), "the query finds it");
            JObject item = found[0];
            string newId = Convert.ToBase64String(Encoding.UTF8.GetBytes(bad));
            item["id"] = newId;
            await byRid.ReplaceItemAsync(item, (string)item["_rid"]!, new PartitionKey("inv"));
            ItemResponse<JObject> read = await c.ReadItemAsync<JObject>(newId, new PartitionKey("inv"));
            Expect.Equal(newId, (string?)read.Resource["id"], "read by the new id");
        });

        await run.Run("items: a document without its partition key property is PartitionKey.None", async () =>
        {
            string id = Guid.NewGuid().ToString();
            ItemResponse<JObject> created = await c.CreateItemAsync(new JObject { ["id"] = id });
            Expect.Equal(HttpStatusCode.Created, created.StatusCode, "create");
            Expect.Equal(HttpStatusCode.OK, (await c.ReadItemAsync<JObject>(id, PartitionKey.None)).StatusCode, "read with None");
            Expect.Equal(HttpStatusCode.NoContent, (await c.DeleteItemAsync<JObject>(id, PartitionKey.None)).StatusCode, "delete with None");
            await Expect.Status(HttpStatusCode.NotFound, () => c.ReadItemAsync<JObject>(id, PartitionKey.None), "read after delete");
        });

        await run.Run("items: a nested partition key path (/a/b/c)", async () =>
        {
            Container nested = await db.CreateContainerAsync(Guid.NewGuid().ToString(), "/a/b/c");
            string id = Guid.NewGuid().ToString();
            var doc = new JObject { ["id"] = id, ["a"] = new JObject { ["b"] = new JObject { ["c"] = "pk1" } } };
            Expect.Equal(HttpStatusCode.Created, (await nested.CreateItemAsync(doc)).StatusCode, "create");
            Expect.Equal(HttpStatusCode.OK, (await nested.ReadItemAsync<JObject>(id, new PartitionKey("pk1"))).StatusCode, "read");
            Expect.Equal(HttpStatusCode.NoContent, (await nested.DeleteItemAsync<JObject>(id, new PartitionKey("pk1"))).StatusCode, "delete");
            await Expect.Status(HttpStatusCode.NotFound, () => nested.ReadItemAsync<JObject>(id, new PartitionKey("pk1")), "read after delete");
        });

        await run.Run("items: delete all items by partition key removes that key's items only", async () =>
        {
            foreach (var (id, pk) in new[] { ("item1", "PK1"), ("item2", "PK1"), ("item3", "PK2") })
                await c.CreateItemAsync(new JObject { ["id"] = id, ["pk"] = pk });
            using (ResponseMessage deleted = await c.DeleteAllItemsByPartitionKeyStreamAsync(new PartitionKey("PK1")))
                Expect.Equal(HttpStatusCode.OK, deleted.StatusCode, "delete by partition key");
            await Fixtures.Until(async () =>
            {
                using ResponseMessage r1 = await c.ReadItemStreamAsync("item1", new PartitionKey("PK1"));
                using ResponseMessage r2 = await c.ReadItemStreamAsync("item2", new PartitionKey("PK1"));
                return r1.StatusCode == HttpStatusCode.NotFound && r2.StatusCode == HttpStatusCode.NotFound;
            }, "PK1's items gone");
            using ResponseMessage other = await c.ReadItemStreamAsync("item3", new PartitionKey("PK2"));
            Expect.Equal(HttpStatusCode.OK, other.StatusCode, "the other key's item");
        });

        await run.Run("items: a document without an id is a 400 (no id is generated)", async () =>
        {
            await Expect.Status(HttpStatusCode.BadRequest, () => c.CreateItemAsync(new JObject { ["pk"] = "AutoID" }, new PartitionKey("AutoID")), "create");
        });

        await run.Run("items: a body whose partition key differs from the request's is a 400", async () =>
        {
            using ResponseMessage r = await c.CreateItemStreamAsync(Json(new JObject { ["id"] = Guid.NewGuid().ToString(), ["pk"] = "good" }), new PartitionKey("BadKey"));
            Expect.Equal(HttpStatusCode.BadRequest, r.StatusCode, "status");
            Expect.True(r.Content is null, "no content");
        });

        await run.Run("items: a stale If-Match is a 412 with the service's message and a charge", async () =>
        {
            var doc = new JObject { ["id"] = Guid.NewGuid().ToString(), ["pk"] = "etag" };
            await c.CreateItemAsync(doc);
            var options = new ItemRequestOptions { IfMatchEtag = Guid.NewGuid().ToString() };
            using (ResponseMessage r = await c.UpsertItemStreamAsync(Json(doc), new PartitionKey("etag"), options))
            {
                Expect.Equal(HttpStatusCode.PreconditionFailed, r.StatusCode, "stream status");
                Expect.True(r.Content is null, "no content");
                Expect.True(r.Headers.RequestCharge > 0, "a charge");
                Expect.True(r.Headers.ActivityId is { Length: > 0 } && r.Headers.ActivityId != Guid.Empty.ToString(), "an activity id");
                Expect.True(r.ErrorMessage?.Contains("One of the specified pre-condition is not met") == true, $"message: {r.ErrorMessage}");
            }
            CosmosException e = await Expect.Status(HttpStatusCode.PreconditionFailed, () => c.UpsertItemAsync(doc, requestOptions: options), "typed");
            Expect.True(e.RequestCharge > 0, "the exception's charge");
            Expect.True(e.ResponseBody.Contains("One of the specified pre-condition is not met"), $"body: {e.ResponseBody}");
        });

        await run.Run("items: replace under a new id renames; a replace that moves the partition key is a 400", async () =>
        {
            string original = Guid.NewGuid().ToString(), renamed = Guid.NewGuid().ToString();
            await c.CreateItemAsync(new JObject { ["id"] = original, ["pk"] = "rn" });
            ItemResponse<JObject> r = await c.ReplaceItemAsync(new JObject { ["id"] = renamed, ["pk"] = "rn" }, original, new PartitionKey("rn"));
            Expect.Equal(renamed, (string?)r.Resource["id"], "the new id");
            await Expect.Status(HttpStatusCode.BadRequest, () => c.ReplaceItemAsync(new JObject { ["id"] = renamed, ["pk"] = "moved" }, renamed, new PartitionKey("rn")), "moving the key");
        });

        await run.Run("patch: a missing item is a 404, an add under a missing parent a 400 with the service's message, a stale If-Match a 412", async () =>
        {
            string id = Guid.NewGuid().ToString();
            await c.CreateItemAsync(new JObject { ["id"] = id, ["pk"] = "patch", ["cost"] = 1 });
            PatchOperation[] ops = [PatchOperation.Add("/nonExistentParent/Child", "bar"), PatchOperation.Remove("/cost")];
            CosmosException missing = await Expect.Status(HttpStatusCode.NotFound, () => c.PatchItemAsync<JObject>(Guid.NewGuid().ToString(), new PartitionKey("patch"), ops), "missing item");
            Expect.True(missing.Message.Contains("Resource Not Found"), $"404 message: {missing.Message}");
            CosmosException bad = await Expect.Status(HttpStatusCode.BadRequest, () => c.PatchItemAsync<JObject>(id, new PartitionKey("patch"), ops), "missing parent");
            Expect.True(bad.Message.Contains("For Operation(1): Add Operation can only create a child object of an existing node(array or object) and cannot create path recursively, no path found beyond: 'nonExistentParent'."),
                $"400 message: {bad.Message}");
            CosmosException stale = await Expect.Status(HttpStatusCode.PreconditionFailed, () => c.PatchItemAsync<JObject>(id, new PartitionKey("patch"), ops,
                new PatchItemRequestOptions { IfMatchEtag = Guid.NewGuid().ToString() }), "stale etag");
            Expect.True(stale.Message.Contains("One of the specified pre-condition is not met"), $"412 message: {stale.Message}");
        });

        await run.Run("items: a point read in a missing container or database is a 404 (stream and typed)", async () =>
        {
            foreach (Container missing in new[] { db.GetContainer(Guid.NewGuid().ToString()), client.GetDatabase(Guid.NewGuid().ToString()).GetContainer("c") })
            {
                using ResponseMessage r = await missing.ReadItemStreamAsync("id1", PartitionKey.None);
                Expect.Equal(HttpStatusCode.NotFound, r.StatusCode, "stream");
                Expect.True(r.ErrorMessage is not null, "an error message");
                await Expect.Status(HttpStatusCode.NotFound, () => missing.ReadItemAsync<JObject>("id1", PartitionKey.None), "typed");
            }
        });

        await run.Run("query: MaxItemCount 1 and 2 give pages of exactly that size", async () =>
        {
            for (int i = 0; i < 6; i++) await c.CreateItemAsync(new JObject { ["id"] = $"q{i}", ["pk"] = "max" });
            foreach (int size in new[] { 1, 2 })
            {
                using FeedIterator<JObject> it = c.GetItemQueryIterator<JObject>(
                    new QueryDefinition("select * from t where t.pk = @pk").WithParameter("@pk", "max"),
                    requestOptions: new QueryRequestOptions { MaxItemCount = size, PartitionKey = new PartitionKey("max") });
                var sizes = new List<int>();
                while (it.HasMoreResults) sizes.Add((await it.ReadNextAsync()).Count);
                Expect.Sequence(Enumerable.Repeat(size, 6 / size), sizes, $"pages of {size}");
            }
        });

        await run.Run("query: a continuation limit of 0 KB and a syntax error are 400s with the service's messages", async () =>
        {
            using FeedIterator<JObject> limited = c.GetItemQueryIterator<JObject>("SELECT r.id FROM root r WHERE r._ts > 0",
                requestOptions: new QueryRequestOptions { ResponseContinuationTokenLimitInKb = 0, MaxItemCount = 10, MaxConcurrency = 1 });
            CosmosException limit = await Expect.Status(HttpStatusCode.BadRequest, () => limited.ReadNextAsync(), "limit 0");
            Expect.True(limit.Message.Contains("continuation token limit specified is not large enough"), $"limit message: {limit.Message}");
            using FeedIterator<JObject> syntax = c.GetItemQueryIterator<JObject>("SELECT r.id FROM root r WHERE r._ts >!= 0",
                requestOptions: new QueryRequestOptions { MaxConcurrency = 1 });
            CosmosException error = await Expect.Status(HttpStatusCode.BadRequest, () => syntax.ReadNextAsync(), "syntax error");
            Expect.True(error.Message.Contains("Syntax error, incorrect syntax near"), $"syntax message: {error.Message}");
        });

        await run.Run("read feed: pages of one from a new iterator per continuation; the last continuation is null", async () =>
        {
            Container feed = await db.CreateContainerAsync(Guid.NewGuid().ToString(), "/pk");
            var ids = new HashSet<string>();
            for (int i = 0; i < 3; i++)
            {
                string id = Guid.NewGuid().ToString();
                ids.Add(id);
                await feed.CreateItemAsync(new JObject { ["id"] = id, ["pk"] = Guid.NewGuid().ToString() });
            }
            var options = new QueryRequestOptions { MaxItemCount = 1 };
            string? token = null;
            for (int pages = 0; ; pages++)
            {
                if (pages > 10) throw new CheckFailed("the read feed never ended");
                using FeedIterator it = feed.GetItemQueryStreamIterator(continuationToken: token, requestOptions: options);
                if (!it.HasMoreResults) break;
                using ResponseMessage page = await it.ReadNextAsync();
                Expect.Equal(page.Headers.ContinuationToken, page.ContinuationToken, "continuation header = property");
                token = page.ContinuationToken;
                foreach (JToken d in JObject.Parse(new StreamReader(page.Content).ReadToEnd())["Documents"]!) ids.Remove((string)d["id"]!);
                if (token is null) break;
            }
            Expect.True(token is null, "the last continuation is null");
            Expect.Equal(0, ids.Count, "every document read");
        });
    }
}
