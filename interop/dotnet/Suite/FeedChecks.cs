using System.Net;
using Microsoft.Azure.Cosmos;
using Newtonsoft.Json.Linq;

namespace CosmosInterop.Suite;

/// <summary>The change feed pull model: per feed range, continuations, latest version and all versions and deletes.</summary>
internal static class FeedChecks
{
    public static async Task Run(CheckRunner run, CosmosClient client, string prefix)
    {
        Database db = await client.CreateDatabaseIfNotExistsAsync($"{prefix}-main");
        Container c = await db.CreateContainerIfNotExistsAsync(new ContainerProperties("feed", "/pk"), 24_000);

        await run.Run("change feed: each feed range from the beginning, then resumed from its continuation", async () =>
        {
            for (int i = 0; i < 40; i++) await c.CreateItemAsync(new JObject { ["id"] = $"f{i}", ["pk"] = $"k{i}" }, new PartitionKey($"k{i}"));
            IReadOnlyList<FeedRange> ranges = await c.GetFeedRangesAsync();
            Expect.Equal(4, ranges.Count, "feed ranges");
            var seen = new List<string>();
            var continuations = new List<string>();
            foreach (FeedRange range in ranges)
            {
                using FeedIterator<JObject> it = c.GetChangeFeedIterator<JObject>(ChangeFeedStartFrom.Beginning(range), ChangeFeedMode.LatestVersion,
                    new ChangeFeedRequestOptions { PageSizeHint = 3 });
                while (true)
                {
                    FeedResponse<JObject> page = await it.ReadNextAsync();
                    if (page.StatusCode == HttpStatusCode.NotModified)
                    {
                        continuations.Add(page.ContinuationToken);
                        break;
                    }
                    seen.AddRange(page.Select(d => (string)d["id"]!));
                }
            }
            Expect.Sequence(Enumerable.Range(0, 40).Select(i => $"f{i}").OrderBy(x => x), seen.OrderBy(x => x), "each document once");
            await c.UpsertItemAsync(new JObject { ["id"] = "f3", ["pk"] = "k3", ["v"] = 2 }, new PartitionKey("k3"));
            await c.CreateItemAsync(new JObject { ["id"] = "f40", ["pk"] = "k40" }, new PartitionKey("k40"));
            var after = new List<string>();
            foreach (string token in continuations)
            {
                using FeedIterator<JObject> it = c.GetChangeFeedIterator<JObject>(ChangeFeedStartFrom.ContinuationToken(token), ChangeFeedMode.LatestVersion);
                while (true)
                {
                    FeedResponse<JObject> page = await it.ReadNextAsync();
                    if (page.StatusCode == HttpStatusCode.NotModified) break;
                    after.AddRange(page.Select(d => (string)d["id"]!));
                }
            }
            Expect.Sequence(["f3", "f40"], after.OrderBy(x => x), "only the changes since");
        });

        await run.Run("change feed: whole container from now, and by partition key", async () =>
        {
            using FeedIterator<JObject> it = c.GetChangeFeedIterator<JObject>(ChangeFeedStartFrom.Now(), ChangeFeedMode.LatestVersion);
            FeedResponse<JObject> first = await it.ReadNextAsync();
            Expect.Equal(HttpStatusCode.NotModified, first.StatusCode, "nothing new at first");
            for (int i = 0; i < 5; i++) await c.CreateItemAsync(new JObject { ["id"] = $"now{i}", ["pk"] = "same" }, new PartitionKey("same"));
            var got = new List<string>();
            for (int pages = 0; it.HasMoreResults && pages < 20; pages++)
            {
                FeedResponse<JObject> page = await it.ReadNextAsync();
                if (page.StatusCode == HttpStatusCode.NotModified && got.Count >= 5) break;
                got.AddRange(page.Select(d => (string)d["id"]!));
            }
            Expect.Sequence(Enumerable.Range(0, 5).Select(i => $"now{i}"), got, "new documents in order");
            using FeedIterator<JObject> byKey = c.GetChangeFeedIterator<JObject>(
                ChangeFeedStartFrom.Beginning(FeedRange.FromPartitionKey(new PartitionKey("same"))), ChangeFeedMode.LatestVersion);
            FeedResponse<JObject> keyed = await byKey.ReadNextAsync();
            Expect.Equal(5, keyed.Count, "one partition key's changes");
        });

        await run.Run("change feed: all versions and deletes (create, replace, delete with metadata)", async () =>
        {
            using FeedIterator<ChangeFeedItem<JObject>> it = c.GetChangeFeedIterator<ChangeFeedItem<JObject>>(ChangeFeedStartFrom.Now(), ChangeFeedMode.AllVersionsAndDeletes);
            FeedResponse<ChangeFeedItem<JObject>> first = await it.ReadNextAsync();
            Expect.Equal(HttpStatusCode.NotModified, first.StatusCode, "nothing new at first");
            await c.CreateItemAsync(new JObject { ["id"] = "avad", ["pk"] = "av", ["v"] = 1 }, new PartitionKey("av"));
            await c.ReplaceItemAsync(new JObject { ["id"] = "avad", ["pk"] = "av", ["v"] = 2 }, "avad", new PartitionKey("av"));
            await c.DeleteItemAsync<JObject>("avad", new PartitionKey("av"));
            var items = new List<ChangeFeedItem<JObject>>();
            for (int pages = 0; pages < 20 && items.Count < 3; pages++)
            {
                FeedResponse<ChangeFeedItem<JObject>> page = await it.ReadNextAsync();
                items.AddRange(page);
            }
            Expect.Sequence([ChangeFeedOperationType.Create, ChangeFeedOperationType.Replace, ChangeFeedOperationType.Delete],
                items.Select(i => i.Metadata.OperationType), "operations");
            Expect.Equal(2, (int)items[1].Current["v"]!, "replace's current image");
            Expect.True(items[2].Metadata.Lsn > items[1].Metadata.Lsn, "lsn grows");
            Expect.Equal("avad", items[2].Metadata.Id, "delete's id");
        });

        // The service commits a transaction with one LSN and no change feed page splits it: "if you create 10 item in
        // a Sproc execution or using Transactional Batch, they all have the same LSN, if you read the Change Feed with a
        // max items header of 5, the backend will always return 10" (github.com/Azure/azure-cosmos-dotnet-v3/issues/2644).
        await run.Run("change feed: a transactional batch of 10 is one LSN and one page with pageSizeHint 5", async () =>
        {
            TransactionalBatch batch = c.CreateTransactionalBatch(new PartitionKey("tx"));
            for (int i = 0; i < 10; i++) batch.CreateItem(new JObject { ["id"] = $"tx{i}", ["pk"] = "tx" });
            using (TransactionalBatchResponse done = await batch.ExecuteAsync())
                Expect.True(done.IsSuccessStatusCode, $"the batch commits ({done.StatusCode})");
            using FeedIterator<JObject> it = c.GetChangeFeedIterator<JObject>(
                ChangeFeedStartFrom.Beginning(FeedRange.FromPartitionKey(new PartitionKey("tx"))), ChangeFeedMode.LatestVersion,
                new ChangeFeedRequestOptions { PageSizeHint = 5 });
            FeedResponse<JObject> page = await it.ReadNextAsync();
            Expect.Sequence(Enumerable.Range(0, 10).Select(i => $"tx{i}"), page.Select(d => (string)d["id"]!), "the first page holds the whole batch");
            Expect.Equal(1, page.Select(d => (long)d["_lsn"]!).Distinct().Count(), "distinct _lsn values");
        });
    }
}
