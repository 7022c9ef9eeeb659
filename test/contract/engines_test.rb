# frozen_string_literal: true

require_relative "engine_contract"

# One contract test class per engine: BlockingEngineContractTest, ... Adding an
# engine is one entry here (name => whether its env says rack.multithread).
ENGINES = {
  "blocking" => false,
  "threads" => true,
  "fibers" => false,
  "hybrid" => true
}.freeze

ENGINES.each do |name, multithread|
  contract = Class.new(SpindleIntegrationTest) do
    include EngineContract
    serve_with "-b", SpindleIntegrationTest::LOOPBACK, "--engine", name, app_path("all")
    define_singleton_method(:engine) { name }
    define_singleton_method(:multithread) { multithread }
  end
  Object.const_set("#{name.capitalize}EngineContractTest", contract)
end
