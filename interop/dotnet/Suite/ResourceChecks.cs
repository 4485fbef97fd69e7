using System.Net;
using Microsoft.Azure.Cosmos;

namespace CosmosInterop.Suite;

/// <summary>Databases, containers and throughput, as an application's setup code uses them.</summary>
internal static class ResourceChecks
{
    public static async Task Run(CheckRunner run, CosmosClient client, string prefix)
    {
        await run.Run("database create/read/if-not-exists/query/delete", async () =>
        {
            string id = $"{prefix}-db";
            DatabaseResponse created = await client.CreateDatabaseAsync(id);
            Expect.Equal(HttpStatusCode.Created, created.StatusCode, "create");
            DatabaseResponse again = await client.CreateDatabaseIfNotExistsAsync(id);
            Expect.Equal(HttpStatusCode.OK, again.StatusCode, "create if not exists (exists)");
            DatabaseResponse read = await client.GetDatabase(id).ReadAsync();
            Expect.Equal(id, read.Resource.Id, "read id");
            await Expect.Status(HttpStatusCode.Conflict, () => client.CreateDatabaseAsync(id), "create twice");
            var found = new List<string>();
            using (FeedIterator<DatabaseProperties> it = client.GetDatabaseQueryIterator<DatabaseProperties>(
                new QueryDefinition("SELECT * FROM d WHERE d.id = @id").WithParameter("@id", id)))
            {
                while (it.HasMoreResults) foreach (DatabaseProperties d in await it.ReadNextAsync()) found.Add(d.Id);
            }
            Expect.Sequence([id], found, "query by id");
            DatabaseResponse deleted = await client.GetDatabase(id).DeleteAsync();
            Expect.Equal(HttpStatusCode.NoContent, deleted.StatusCode, "delete");
            await Expect.Status(HttpStatusCode.NotFound, () => client.GetDatabase(id).ReadAsync(), "read after delete");
        });

        Database db = await client.CreateDatabaseIfNotExistsAsync($"{prefix}-main");

        await run.Run("container create/read/replace/if-not-exists/list/delete", async () =>
        {
            var props = new ContainerProperties("c1", "/pk") { DefaultTimeToLive = -1 };
            ContainerResponse created = await db.CreateContainerAsync(props, throughput: 400);
            Expect.Equal(HttpStatusCode.Created, created.StatusCode, "create");
            Expect.Equal("/pk", created.Resource.PartitionKeyPath, "partition key path");
            ContainerResponse again = await db.CreateContainerIfNotExistsAsync("c1", "/pk");
            Expect.Equal(HttpStatusCode.OK, again.StatusCode, "if not exists (exists)");
            ContainerProperties read = await db.GetContainer("c1").ReadContainerAsync();
            Expect.Equal(-1, read.DefaultTimeToLive ?? 0, "defaultTtl read back");
            read.DefaultTimeToLive = 3600;
            read.IndexingPolicy.ExcludedPaths.Add(new ExcludedPath { Path = "/big/*" });
            ContainerResponse replaced = await db.GetContainer("c1").ReplaceContainerAsync(read);
            Expect.Equal(3600, replaced.Resource.DefaultTimeToLive ?? 0, "defaultTtl replaced");
            Expect.True(replaced.Resource.IndexingPolicy.ExcludedPaths.Any(p => p.Path == "/big/*"), "excluded path kept");
            var ids = new List<string>();
            using (FeedIterator<ContainerProperties> it = db.GetContainerQueryIterator<ContainerProperties>())
            {
                while (it.HasMoreResults) foreach (ContainerProperties c in await it.ReadNextAsync()) ids.Add(c.Id);
            }
            Expect.True(ids.Contains("c1"), "listed");
            await db.GetContainer("c1").DeleteContainerAsync();
            await Expect.Status(HttpStatusCode.NotFound, () => db.GetContainer("c1").ReadContainerAsync(), "read after delete");
        });

        await run.Run("container with hierarchical partition key", async () =>
        {
            var props = new ContainerProperties("hpk", new List<string> { "/tenant", "/user" });
            Container c = await db.CreateContainerAsync(props);
            var key = new PartitionKeyBuilder().Add("t1").Add("u1").Build();
            await c.CreateItemAsync(new { id = "a", tenant = "t1", user = "u1" }, key);
            ItemResponse<dynamic> read = await c.ReadItemAsync<dynamic>("a", key);
            Expect.Equal("t1", (string)read.Resource.tenant, "read by full key");
            var prefixKey = new PartitionKeyBuilder().Add("t1").Build();
            int n = 0;
            using (FeedIterator<dynamic> it = c.GetItemQueryIterator<dynamic>("SELECT * FROM c",
                requestOptions: new QueryRequestOptions { PartitionKey = prefixKey }))
            {
                while (it.HasMoreResults) n += (await it.ReadNextAsync()).Count;
            }
            Expect.Equal(1, n, "query by key prefix");
            await c.DeleteContainerAsync();
        });

        await run.Run("throughput read/replace (manual and autoscale)", async () =>
        {
            Container c = await db.CreateContainerAsync(new ContainerProperties("tp", "/pk"), throughput: 400);
            int? rus = await c.ReadThroughputAsync();
            Expect.Equal(400, rus ?? 0, "read");
            ThroughputResponse replaced = await c.ReplaceThroughputAsync(1000);
            Expect.Equal(1000, replaced.Resource.Throughput ?? 0, "replaced");
            ThroughputResponse reread = await c.ReadThroughputAsync(new RequestOptions());
            Expect.Equal(1000, reread.Resource.Throughput ?? 0, "read after replace");
            Expect.True(reread.MinThroughput is >= 400, $"min throughput reported ({reread.MinThroughput})");
            await Expect.Status(HttpStatusCode.BadRequest, () => c.ReplaceThroughputAsync(450), "450 RU/s (not a step of 100)");
            Container auto = await db.CreateContainerAsync(new ContainerProperties("tp-auto", "/pk"),
                ThroughputProperties.CreateAutoscaleThroughput(4000));
            ThroughputResponse a = await auto.ReadThroughputAsync(new RequestOptions());
            Expect.Equal(4000, a.Resource.AutoscaleMaxThroughput ?? 0, "autoscale max");
            Database shared = await client.CreateDatabaseAsync($"{prefix}-shared", throughput: 400);
            Expect.Equal(400, await shared.ReadThroughputAsync() ?? 0, "database throughput");
            await shared.DeleteAsync();
            await c.DeleteContainerAsync();
            await auto.DeleteContainerAsync();
        });
    }
}
