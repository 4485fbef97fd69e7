using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace CosmosInterop.Suite;

/// <summary>
/// Queries through the SDK's own pipeline: on Linux the SDK asks the gateway for the query plan, then queries every
/// partition key range with the plan's rewritten query and merges the pages itself (ORDER BY, GROUP BY, aggregates,
/// OFFSET/LIMIT, DISTINCT, TOP), paging with small pages so continuations are exercised.
/// </summary>
internal static class QueryChecks
{
    private const int Docs = 60;

    public static async Task Run(CheckRunner run, CosmosClient client, string prefix)
    {
        Database db = await client.CreateDatabaseIfNotExistsAsync($"{prefix}-main");
        // 24,000 RU/s: four physical ranges (the service's rule the emulator follows).
        Container c = await db.CreateContainerIfNotExistsAsync(new ContainerProperties("q", "/pk"), 24_000);
        string[] colors = ["red", "green", "blue"];
        for (int i = 0; i < Docs; i++)
        {
            var doc = new JObject { ["id"] = $"q{i:D3}", ["pk"] = $"k{i % 13}", ["n"] = i, ["color"] = colors[i % 3] };
            if (i % 10 == 0) doc.Remove("color");
            await c.UpsertItemAsync(doc, new PartitionKey($"k{i % 13}"));
        }

        await run.Run("query: the container has several ranges", async () =>
        {
            IReadOnlyList<FeedRange> ranges = await c.GetFeedRangesAsync();
            Expect.Equal(4, ranges.Count, "feed ranges");
        });

        await run.Run("query: cross-partition ORDER BY, pages of 7", async () =>
        {
            List<int> desc = await All<int>(c, "SELECT VALUE c.n FROM c ORDER BY c.n DESC", 7);
            Expect.Sequence(Enumerable.Range(0, Docs).Reverse(), desc, "descending");
            List<JObject> asc = await All<JObject>(c, "SELECT c.id, c.n FROM c WHERE c.n >= 10 ORDER BY c.n", 7);
            Expect.Sequence(Enumerable.Range(10, Docs - 10), asc.Select(d => (int)d["n"]!), "ascending with a filter");
        });

        await run.Run("query: cross-partition ORDER BY on a string, with continuation tokens resumed", async () =>
        {
            var ids = new List<string>();
            string? token = null;
            int pages = 0;
            do
            {
                using FeedIterator<string> it = c.GetItemQueryIterator<string>("SELECT VALUE c.id FROM c ORDER BY c.id", token,
                    new QueryRequestOptions { MaxItemCount = 9 });
                FeedResponse<string> page = await it.ReadNextAsync();
                ids.AddRange(page);
                token = page.ContinuationToken;
                pages++;
            } while (token != null && pages < 100);
            Expect.Sequence(Enumerable.Range(0, Docs).Select(i => $"q{i:D3}"), ids, "every id once, in order");
        });

        await run.Run("query: OFFSET/LIMIT and TOP across partitions", async () =>
        {
            List<int> page = await All<int>(c, "SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 5 LIMIT 10", 3);
            Expect.Sequence(Enumerable.Range(5, 10), page, "offset 5 limit 10");
            List<int> top = await All<int>(c, "SELECT TOP 4 VALUE c.n FROM c ORDER BY c.n DESC", 2);
            Expect.Sequence([59, 58, 57, 56], top, "top 4");
        });

        await run.Run("query: aggregates (COUNT, SUM, AVG, MIN, MAX) across partitions", async () =>
        {
            Expect.Sequence([Docs], await All<int>(c, "SELECT VALUE COUNT(1) FROM c", 5), "count");
            Expect.Sequence([Docs * (Docs - 1) / 2], await All<int>(c, "SELECT VALUE SUM(c.n) FROM c", 5), "sum");
            Expect.Sequence([(Docs - 1) / 2.0], await All<double>(c, "SELECT VALUE AVG(c.n) FROM c", 5), "avg");
            Expect.Sequence([0], await All<int>(c, "SELECT VALUE MIN(c.n) FROM c", 5), "min");
            Expect.Sequence([Docs - 1], await All<int>(c, "SELECT VALUE MAX(c.n) FROM c", 5), "max");
            List<JObject> several = await All<JObject>(c, "SELECT COUNT(1) AS n, MAX(c.n) AS hi FROM c WHERE c.n < 30", 5);
            Expect.Equal(1, several.Count, "one row");
            Expect.Equal(30, (int)several[0]["n"]!, "count with a filter");
            Expect.Equal(29, (int)several[0]["hi"]!, "max with a filter");
        });

        await run.Run("query: GROUP BY across partitions (a missing key is its own group)", async () =>
        {
            List<JObject> groups = await All<JObject>(c, "SELECT c.color, COUNT(1) AS n, SUM(c.n) AS total FROM c GROUP BY c.color", 2);
            var byColor = groups.ToDictionary(g => (string?)g["color"] ?? "(none)", g => (int)g["n"]!);
            Expect.Equal(4, byColor.Count, $"groups ({string.Join(",", byColor.Keys)})");
            Expect.Equal(6, byColor["(none)"], "documents without a color");
            Expect.Equal(Docs, byColor.Values.Sum(), "every document in one group");
        });

        await run.Run("query: DISTINCT across partitions", async () =>
        {
            List<string> colors = await All<string>(c, "SELECT DISTINCT VALUE c.color FROM c WHERE IS_DEFINED(c.color)", 2);
            Expect.Sequence(["blue", "green", "red"], colors.OrderBy(x => x), "distinct colors");
        });

        await run.Run("query: single partition with parameters", async () =>
        {
            var q = new QueryDefinition("SELECT VALUE c.n FROM c WHERE c.n > @min").WithParameter("@min", 20);
            var ns = new List<int>();
            using FeedIterator<int> it = c.GetItemQueryIterator<int>(q, requestOptions: new QueryRequestOptions { PartitionKey = new PartitionKey("k3"), MaxItemCount = 1 });
            while (it.HasMoreResults) ns.AddRange(await it.ReadNextAsync());
            Expect.Sequence(Enumerable.Range(21, Docs - 21).Where(i => i % 13 == 3), ns.OrderBy(x => x), "partition k3 above 20");
        });

        await run.Run("query: LINQ (Where, OrderBy, Select)", async () =>
        {
            var linq = c.GetItemLinqQueryable<JObject>(requestOptions: new QueryRequestOptions { MaxItemCount = 4 });
            var ids = new List<string>();
            using FeedIterator<string> it = Microsoft.Azure.Cosmos.Linq.CosmosLinqExtensions.ToFeedIterator(
                linq.Where(d => (int)d["n"]! < 8).OrderBy(d => d["n"]).Select(d => (string)d["id"]!));
            while (it.HasMoreResults) ids.AddRange(await it.ReadNextAsync());
            Expect.Sequence(Enumerable.Range(0, 8).Select(i => $"q{i:D3}"), ids, "ids");
        });

        await run.Run("query: a syntax error is a 400", async () =>
        {
            await Expect.Status(System.Net.HttpStatusCode.BadRequest, () => All<JObject>(c, "SELECT * FORM c", 5), "bad query");
        });
    }

    private static async Task<List<T>> All<T>(Container c, string query, int pageSize)
    {
        var all = new List<T>();
        using FeedIterator<T> it = c.GetItemQueryIterator<T>(query, requestOptions: new QueryRequestOptions { MaxItemCount = pageSize });
        while (it.HasMoreResults) all.AddRange(await it.ReadNextAsync());
        return all;
    }
}
