More than nine hundred volunteers handed out water along the route of the Lakeshore Marathon in Duluth on Sunday, the largest team in the race's history. Race director Carla Jensen said the Lakeshore Running Club had recruited helpers from every school in the city.

Jensen said next year's race would start an hour earlier to avoid the heat.

@highlight

Lakeshore Marathon relies on record team of volunteers