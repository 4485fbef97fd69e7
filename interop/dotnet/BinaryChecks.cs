using System.Collections.Concurrent;
using System.Net;
using System.Text;
using CosmosInterop.Suite;
using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace CosmosInterop;

/// <summary>
/// <c>binary-checks</c>: item operations as an application with AZURE_COSMOS_BINARY_ENCODING_ENABLED=true makes
/// them (the variable is the caller's: the SDK reads it itself), each a <c>check</c> line, then one <c>wire</c> line
/// with what went over the wire per operation — how many request bodies were in Cosmos binary JSON (first byte
/// 0x80), which x-ms-cosmos-supported-serialization-formats values were sent, and how many answers were binary —
/// so the test knows the binary path was taken, not only that the operations worked.
/// </summary>
internal static class BinaryChecks
{
    private sealed class Wire
    {
        public readonly ConcurrentDictionary<string, int> BinaryBodies = new();
        public readonly ConcurrentDictionary<string, int> TextBodies = new();
        public readonly ConcurrentDictionary<string, int> BinaryAnswers = new();
        public readonly ConcurrentDictionary<string, byte> SupportedFormats = new();
        /// <summary>The first bulk request's body (HybridRow; its operations carry the items as serialized).</summary>
        public string? BulkBody;
    }

    /// <summary>Records each request's body format and headers on the way out, and each answer's format.</summary>
    private sealed class Recorder(Wire wire, HttpMessageHandler inner) : DelegatingHandler(inner)
    {
        protected override async Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
        {
            string op = $"{request.Method} {Kind(request)}";
            if (request.Content is { } content)
            {
                byte[] body = await content.ReadAsByteArrayAsync(cancellationToken);
                if (body.Length > 0) (body[0] == 0x80 ? wire.BinaryBodies : wire.TextBodies).AddOrUpdate(op, 1, (_, n) => n + 1);
                if (request.Headers.Contains("x-ms-cosmos-batch-atomic") && request.Headers.GetValues("x-ms-cosmos-batch-atomic").First() == "False")
                    Interlocked.CompareExchange(ref wire.BulkBody, Convert.ToHexString(body).ToLowerInvariant(), null);
            }
            if (request.Headers.TryGetValues("x-ms-cosmos-supported-serialization-formats", out var formats))
                wire.SupportedFormats.TryAdd($"{op}: {string.Join(",", formats)}", 0);
            HttpResponseMessage response = await base.SendAsync(request, cancellationToken);
            byte[] answer = await response.Content.ReadAsByteArrayAsync(cancellationToken);
            if (answer.Length > 0 && answer[0] == 0x80) wire.BinaryAnswers.AddOrUpdate(op, 1, (_, n) => n + 1);
            return response;
        }

        /// <summary>"docs" for the item feed, "doc" for one item, else the path's last resource type.</summary>
        private static string Kind(HttpRequestMessage request)
        {
            string[] segments = request.RequestUri!.AbsolutePath.Trim('/').Split('/');
            if (segments.Length >= 2 && segments[^2] == "docs") return "doc";
            return segments.Length % 2 == 1 ? segments[^1] : segments[^2];
        }
    }

    /// <summary>The binary-encoding commands: <c>binary-vectors</c> (BinaryVectors.cs) and <c>binary-checks</c>.</summary>
    public static async Task<int> Dispatch(string command, JObject config) => command == "binary-vectors"
        ? BinaryVectors.Run()
        : await Run(config.ToObject<ClientConfig>()!, (string?)config["prefix"] ?? $"bin-{Guid.NewGuid():N}"[..12]);

    private static async Task<int> Run(ClientConfig config, string prefix)
    {
        var wire = new Wire();
        var sockets = new SocketsHttpHandler();
        // The emulator's certificate is a throw-away self-signed one made by the test.
        sockets.SslOptions.RemoteCertificateValidationCallback = (_, _, _, _) => true;
        var recorder = new Recorder(wire, sockets);
        CosmosClient Client(bool bulk) => new(config.Endpoint, config.Key, new CosmosClientOptions
        {
            ConnectionMode = ConnectionMode.Gateway,
            LimitToEndpoint = true,
            HttpClientFactory = () => new HttpClient(recorder, disposeHandler: false),
            AllowBulkExecution = bulk,
        });
        using CosmosClient client = Client(bulk: false);
        Database db = await client.CreateDatabaseIfNotExistsAsync($"{prefix}-binary");
        Container c = await db.CreateContainerIfNotExistsAsync(new ContainerProperties("items", "/pk"));
        var run = new CheckRunner();
        JObject Doc(string id, int n) => new()
        {
            ["id"] = id, ["pk"] = "p", ["n"] = n, ["name"] = "Zoë 中文", ["tags"] = new JArray("a", "b"),
            ["when"] = "2024-02-29T13:14:15.678Z", ["guid"] = "0f8fad5b-d9cb-469f-a165-70867728950e",
            ["nested"] = new JObject { ["ratio"] = 0.125, ["big"] = 1L << 40 },
        };

        await run.Run("binary: create/read/replace/upsert (typed)", async () =>
        {
            ItemResponse<JObject> created = await c.CreateItemAsync(Doc("t1", 1), new PartitionKey("p"));
            Expect.Equal(HttpStatusCode.Created, created.StatusCode, "create");
            Expect.Equal("Zoë 中文", (string?)created.Resource["name"], "created body");
            ItemResponse<JObject> read = await c.ReadItemAsync<JObject>("t1", new PartitionKey("p"));
            Expect.True(JToken.DeepEquals(Doc("t1", 1)["nested"], read.Resource["nested"]), $"read nested: {read.Resource["nested"]}");
            ItemResponse<JObject> replaced = await c.ReplaceItemAsync(Doc("t1", 2), "t1", new PartitionKey("p"));
            Expect.Equal(2, (int)replaced.Resource["n"]!, "replace");
            ItemResponse<JObject> upserted = await c.UpsertItemAsync(Doc("t2", 3), new PartitionKey("p"));
            Expect.Equal(HttpStatusCode.Created, upserted.StatusCode, "upsert");
            await Expect.Status(HttpStatusCode.Conflict, () => c.CreateItemAsync(Doc("t1", 9), new PartitionKey("p")), "create twice");
        });

        await run.Run("binary: create/read/upsert (stream)", async () =>
        {
            using var body = new MemoryStream(Encoding.UTF8.GetBytes("{\"id\":\"s1\",\"pk\":\"p\",\"v\":\"stream\",\"n\":300,\"when\":\"2024-02-29T13:14:15.678Z\"}"));
            using ResponseMessage created = await c.CreateItemStreamAsync(body, new PartitionKey("p"));
            Expect.Equal(HttpStatusCode.Created, created.StatusCode, "create stream");
            using ResponseMessage read = await c.ReadItemStreamAsync("s1", new PartitionKey("p"));
            string text = await new StreamReader(read.Content).ReadToEndAsync();
            // The date-time string went as a packed string of 4-bit characters: it comes back as written.
            Expect.True(text.Contains("\"when\":\"2024-02-29T13:14:15.678Z\""), $"read stream: {text}");
            Expect.Equal(300, (int)JObject.Parse(text)["n"]!, "read stream");
            using var again = new MemoryStream(Encoding.UTF8.GetBytes("{\"id\":\"s1\",\"pk\":\"p\",\"v\":\"again\"}"));
            using ResponseMessage upserted = await c.UpsertItemStreamAsync(again, new PartitionKey("p"));
            Expect.Equal(HttpStatusCode.OK, upserted.StatusCode, "upsert stream");
        });

        await run.Run("binary: patch", async () =>
        {
            ItemResponse<JObject> patched = await c.PatchItemAsync<JObject>("t1", new PartitionKey("p"),
                [PatchOperation.Increment("/n", 5), PatchOperation.Add("/tags/-", "c")]);
            Expect.Equal(7, (int)patched.Resource["n"]!, "incremented");
            Expect.Equal(3, ((JArray)patched.Resource["tags"]!).Count, "added");
        });

        await run.Run("binary: transactional batch", async () =>
        {
            using TransactionalBatchResponse batch = await c.CreateTransactionalBatch(new PartitionKey("p"))
                .CreateItem(Doc("b1", 1)).UpsertItem(Doc("b2", 2)).ReplaceItem("t2", Doc("t2", 4)).ReadItem("t1")
                .ExecuteAsync();
            Expect.True(batch.IsSuccessStatusCode, $"batch: {batch.StatusCode} {batch.ErrorMessage}");
            Expect.Equal(7, (int)batch.GetOperationResultAtIndex<JObject>(3).Resource["n"]!, "read in batch");
        });

        await run.Run("binary: query", async () =>
        {
            var ids = new List<string>();
            using FeedIterator<JObject> it = c.GetItemQueryIterator<JObject>(
                new QueryDefinition("SELECT * FROM c WHERE c.pk = @pk ORDER BY c.id").WithParameter("@pk", "p"));
            while (it.HasMoreResults) ids.AddRange((await it.ReadNextAsync()).Select(d => (string)d["id"]!));
            Expect.Sequence(["b1", "b2", "s1", "t1", "t2"], ids, "query");
        });

        await run.Run("binary: change feed", async () =>
        {
            var ids = new List<string>();
            using FeedIterator<JObject> it = c.GetChangeFeedIterator<JObject>(ChangeFeedStartFrom.Beginning(), ChangeFeedMode.LatestVersion);
            while (true)
            {
                FeedResponse<JObject> page = await it.ReadNextAsync();
                if (page.StatusCode == HttpStatusCode.NotModified) break;
                ids.AddRange(page.Select(d => (string)d["id"]!));
            }
            Expect.Sequence(["b1", "b2", "s1", "t1", "t2"], ids.Order(), "change feed");
        });

        await run.Run("binary: bulk", async () =>
        {
            using CosmosClient bulk = Client(bulk: true);
            Container bc = bulk.GetContainer(db.Id, "items");
            ItemResponse<JObject>[] created = await Task.WhenAll(Enumerable.Range(0, 3).Select(i =>
                bc.CreateItemAsync(new JObject { ["id"] = $"k{i}", ["pk"] = "bulk", ["n"] = 300 + i }, new PartitionKey("bulk"))));
            Expect.True(created.All(r => r.StatusCode == HttpStatusCode.Created), "bulk creates");
            ItemResponse<JObject> read = await c.ReadItemAsync<JObject>("k2", new PartitionKey("bulk"));
            Expect.Equal(302, (int)read.Resource["n"]!, "read a bulk create");
        });

        await run.Run("binary: delete", async () =>
        {
            ItemResponse<JObject> deleted = await c.DeleteItemAsync<JObject>("b1", new PartitionKey("p"));
            Expect.Equal(HttpStatusCode.NoContent, deleted.StatusCode, "delete");
        });

        await db.DeleteStreamAsync();
        Output.Line(new
        {
            ev = "wire",
            binaryBodies = wire.BinaryBodies,
            textBodies = wire.TextBodies,
            binaryAnswers = wire.BinaryAnswers,
            supportedFormats = wire.SupportedFormats.Keys.Order().ToList(),
            bulkBody = wire.BulkBody,
        });
        Output.Line(new { ev = "summary", passed = run.Passed, failed = run.Failed });
        return run.Failed == 0 ? 0 : 1;
    }
}
