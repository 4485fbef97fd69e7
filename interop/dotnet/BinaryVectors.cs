using System.Reflection;
using System.Text;
using Microsoft.Azure.Cosmos;
using Newtonsoft.Json;
using Newtonsoft.Json.Linq;

namespace CosmosInterop;

/// <summary>
/// <c>binary-vectors</c>: documents written in Cosmos binary JSON by the SDK's own code, one line each —
/// <c>{ev:"vector", name, writer, hex, json}</c> — for the emulator's decoder tests
/// (test/fixtures/cosmos-binary/vectors.json). <c>hex</c> is what the SDK sends with
/// AZURE_COSMOS_BINARY_ENCODING_ENABLED; <c>json</c> is how the SDK itself reads those bytes back (its Newtonsoft
/// reader of binary JSON), so the decoder is judged against Microsoft's reading, not ours.
/// The writers are the SDK's (internal, hence reflection):
/// <list type="bullet">
/// <item><c>stream</c>: CosmosSerializationUtil.ConvertToStreamUsingJsonSerializationFormat, which the stream APIs
/// (CreateItemStreamAsync …) run on a text body;</item>
/// <item><c>typed</c>: CosmosJsonDotNetSerializer(binaryEncodingEnabled: true).ToStream, which the typed APIs run;</item>
/// <item><c>options</c>: JsonWriter.Create(Binary, EnableNumberArrays | EnableUInt64Values | EnableBase64Strings),
/// the writer's optional encodings (uniform number arrays, unsigned 64-bit numbers, base64 strings).</item>
/// </list>
/// </summary>
internal static class BinaryVectors
{
    private static readonly Assembly Sdk = typeof(CosmosClient).Assembly;
    private static readonly Type FormatType = SdkType("Microsoft.Azure.Cosmos.Json.JsonSerializationFormat");
    private static readonly object Binary = Enum.Parse(FormatType, "Binary");

    private sealed class Typed
    {
        public string id = "typed-1";
        public string pk = "p";
        public short small = -1234;
        public int count = 42;
        public long big = 1L << 40;
        public double ratio = 0.125;
        public float single = 1.5f;
        public decimal price = 19.99m;
        public bool ok = true;
        public string? none = null;
        public Guid guid = Guid.Parse("0f8fad5b-d9cb-469f-a165-70867728950e");
        public DateTime when = new(2024, 2, 29, 13, 14, 15, 678, DateTimeKind.Utc);
        public byte[] blob = [1, 2, 3, 250];
        public char letter = 'x';
        public ulong huge = ulong.MaxValue;
        public int[] numbers = [1, 2, 3];
        public Dictionary<string, object?> nested = new() { ["a"] = 1, ["b"] = new[] { "x", "y" } };
    }

    public static int Run()
    {
        foreach ((string name, string json) in Documents())
        {
            Emit(name, "stream", StreamWriter(json));
            // The big one once: the options change nothing in it.
            if (name != BigDocument) Emit(name, "options", OptionsWriter(json));
        }
        Emit("typed", "typed", TypedWriter(new Typed()));
        return 0;
    }

    private static void Emit(string name, string writer, byte[] bytes)
    {
        Output.Line(new { ev = "vector", name, writer, hex = Convert.ToHexString(bytes).ToLowerInvariant(), json = ReadBack(bytes) });
    }

    private const string BigDocument = "4-byte lengths";

    private static IEnumerable<(string, string)> Documents()
    {
        yield return ("empty object", "{}");
        yield return ("empty array", "[]");
        yield return ("one property", "{\"id\":\"a\"}");
        yield return ("one item", "[7]");
        yield return ("system strings", "{\"id\":\"x\",\"_rid\":\"r\",\"_etag\":\"e\",\"_ts\":1,\"type\":\"Point\",\"coordinates\":[1,2],\"name\":\"Name\",\"value\":\"Value\",\"label\":\"url\",\"$s\":\"$t\"}");
        yield return ("literals", "{\"t\":true,\"f\":false,\"n\":null,\"arr\":[true,false,null]}");
        yield return ("integers", "{\"zero\":0,\"lit\":31,\"u8\":200,\"i16\":-300,\"i16p\":30000,\"i32\":100000,\"i32n\":-100000,\"i64\":1099511627776,\"i64n\":-1099511627776,\"neg\":-1,\"max\":9007199254740991}");
        yield return ("doubles", "{\"half\":1.5,\"q\":-0.25,\"big\":1e300,\"tiny\":5e-324,\"pi\":3.141592653589793,\"whole\":2.0}");
        yield return ("short strings", "{\"e\":\"\",\"a\":\"abc\",\"u\":\"Zoë 中文 🚀\",\"esc\":\"quote\\\" back\\\\ nl\\n tab\\t nul\\u0000\"}");
        yield return ("64-byte string", $"{{\"s\":\"{new string('\u00e9', 40)}\"}}");
        yield return ("2-byte length string", $"{{\"s\":\"{string.Concat(Enumerable.Repeat("é中", 100))}\"}}");
        yield return ("hex strings", "{\"lower\":\"0123456789abcdef0123\",\"upper\":\"0123456789ABCDEF01234\",\"odd\":\"abcdef0123456789a\"}");
        yield return ("date-time strings", "{\"when\":\"2024-02-29T13:14:15.678Z\",\"spaced\":\"2024-02-29 13:14:15.6789\"}");
        yield return ("packed strings", "{\"p4\":\"abcdabcdabcdabcdabcdabcdab\",\"p5\":\"abcdefghijklmnopqrstabcdefghijklmnop\",\"p6\":\"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuv\"}");
        yield return ("7-bit strings", $"{{\"l1\":\"{Ascii(120)}\",\"l2\":\"{Ascii(700)}\"}}");
        yield return ("base64 strings", "{\"rid\":\"AAAAAAAAAAAAAAAAAAAAAA==\",\"std\":\"SGVsbG8sIHdvcmxkISBIZWxsbywgd29ybGQhIEhlbGxvLCB3b3JsZCE+/w==\",\"url\":\"SGVsbG8sIHdvcmxkISBIZWxsbywgd29ybGQhIEhlbGxvLCB3b3JsZCE-_w\"}");
        yield return ("guid strings", "{\"lower\":\"0f8fad5b-d9cb-469f-a165-70867728950e\",\"upper\":\"0F8FAD5B-D9CB-469F-A165-70867728950E\",\"quoted\":\"\\\"0f8fad5b-d9cb-469f-a165-70867728950e\\\"\",\"mixed\":\"0f8fad5b-D9CB-469f-a165-70867728950e\"}");
        yield return ("repeated names and values", "[" + string.Join(",", Enumerable.Range(0, 40).Select(i => $"{{\"category\":\"books\",\"title\":\"t{i}\",\"status\":\"active\",\"n\":{i}}}")) + "]");
        yield return ("count-prefixed array", "[" + string.Join(",", Enumerable.Range(0, 20).Select(i => $"\"s{i}\"")) + "]");
        yield return ("2-byte length containers", "{\"items\":[" + string.Join(",", Enumerable.Range(0, 300).Select(i => $"{{\"k{i % 7}\":{i * 1000},\"w\":\"v{i}\"}}")) + "]}");
        yield return ("number arrays", "{\"u8\":[1,2,200,255],\"i8\":[-1,2,-3,4],\"i16\":[1000,-1000,3],\"i32\":[100000,-2,3],\"i64\":[1099511627776,1,2],\"f64\":[1.5,2.25,-3.125],\"matrix\":[[1,2],[3,4],[5,6]],\"mixed\":[1,\"a\",2]}");
        yield return ("uniform arrays", "{\"i32\":[100000,200000,300000,400000],\"i64\":[1099511627776,2199023255552,3298534883328],\"wide\":[" + string.Join(",", Enumerable.Range(100, 300)) + "],\"matrix\":[[100,101,102,103,104,105],[106,107,108,109,110,111],[112,113,114,115,116,117]],\"tall\":[" + string.Join(",", Enumerable.Range(0, 300).Select(i => $"[{100 + (i % 50)},101,102,103,104]")) + "]}");
        yield return ("unsigned 64-bit", "{\"u64\":18446744073709551615}");
        yield return ("nested", "{\"a\":{\"b\":{\"c\":{\"d\":{\"e\":{\"f\":{\"g\":{\"h\":[[[[[1]]]]]}}}}}}}}");
        // Over 65,535 bytes: a 4-byte length string, then names and values repeated past it (3-byte reference offsets).
        yield return (BigDocument, $"{{\"big\":\"{string.Concat(Enumerable.Repeat("中文", 11_000))}\",\"after\":[" + string.Join(",", Enumerable.Range(0, 3).Select(i => $"{{\"category\":\"books\",\"title\":\"t{i}\",\"status\":\"active\"}}")) + "]}");
    }

    private static string Ascii(int length)
    {
        var sb = new StringBuilder(length);
        for (int i = 0; i < length; i++) sb.Append((char)(' ' + 1 + ((i * 37) % 94)));
        return sb.ToString().Replace("\\", "/").Replace("\"", "'");
    }

    private static byte[] StreamWriter(string json)
    {
        MethodInfo convert = SdkType("Microsoft.Azure.Cosmos.CosmosSerializationUtil")
            .GetMethod("ConvertToStreamUsingJsonSerializationFormat", BindingFlags.Static | BindingFlags.NonPublic | BindingFlags.Public)!;
        var stream = (Stream)convert.Invoke(null, [new ReadOnlyMemory<byte>(Encoding.UTF8.GetBytes(json)), Binary])!;
        return ReadAll(stream);
    }

    private static byte[] OptionsWriter(string json)
    {
        Type writerFactory = SdkType("Microsoft.Azure.Cosmos.Json.JsonWriter");
        Type options = SdkType("Microsoft.Azure.Cosmos.Json.JsonWriteOptions");
        object writer = writerFactory.GetMethods(BindingFlags.Static | BindingFlags.Public)
            .Single(m => m.Name == "Create" && m.GetParameters().Length == 4)
            .Invoke(null, [Binary, Enum.ToObject(options, 7), 256, null])!;
        object reader = SdkType("Microsoft.Azure.Cosmos.Json.JsonReader").GetMethods(BindingFlags.Static | BindingFlags.Public)
            .Single(m => m.Name == "Create" && m.GetParameters().Length == 2 && m.GetParameters()[0].ParameterType == typeof(ReadOnlyMemory<byte>))
            .Invoke(null, [new ReadOnlyMemory<byte>(Encoding.UTF8.GetBytes(json)), null])!;
        Type writerInterface = SdkType("Microsoft.Azure.Cosmos.Json.IJsonWriter");
        SdkType("Microsoft.Azure.Cosmos.Json.IJsonReader").GetMethod("WriteAll")!.Invoke(reader, [writer]);
        var result = (ReadOnlyMemory<byte>)writerInterface.GetMethod("GetResult")!.Invoke(writer, null)!;
        return result.ToArray();
    }

    private static byte[] TypedWriter(object value)
    {
        Type serializerType = SdkType("Microsoft.Azure.Cosmos.CosmosJsonDotNetSerializer");
        object serializer = serializerType.GetConstructor(BindingFlags.Instance | BindingFlags.NonPublic | BindingFlags.Public, [typeof(bool)])!
            .Invoke([true]);
        var stream = (Stream)serializerType.GetMethod("ToStream")!.MakeGenericMethod(value.GetType()).Invoke(serializer, [value])!;
        return ReadAll(stream);
    }

    /// <summary>The SDK's reading of binary JSON (CosmosDBToNewtonsoftReader, what its typed APIs deserialize with), as text.</summary>
    private static string ReadBack(byte[] bytes)
    {
        object binaryReader = SdkType("Microsoft.Azure.Cosmos.Json.JsonReader").GetMethods(BindingFlags.Static | BindingFlags.Public)
            .Single(m => m.Name == "Create" && m.GetParameters().Length == 3 && m.GetParameters()[0].ParameterType == FormatType)
            .Invoke(null, [Binary, new ReadOnlyMemory<byte>(bytes), null])!;
        var reader = (JsonReader)SdkType("Microsoft.Azure.Cosmos.Json.Interop.CosmosDBToNewtonsoftReader")
            .GetConstructors(BindingFlags.Instance | BindingFlags.NonPublic | BindingFlags.Public)
            .Single(c => c.GetParameters().Length == 1)
            .Invoke([binaryReader]);
        reader.DateParseHandling = DateParseHandling.None;
        reader.FloatParseHandling = FloatParseHandling.Double;
        return JToken.ReadFrom(reader).ToString(Formatting.None);
    }

    private static byte[] ReadAll(Stream stream)
    {
        using var copy = new MemoryStream();
        stream.CopyTo(copy);
        return copy.ToArray();
    }

    private static Type SdkType(string name) =>
        Sdk.GetType(name, throwOnError: true)!;
}
